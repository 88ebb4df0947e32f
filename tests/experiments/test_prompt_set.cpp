#include <gtest/gtest.h>

#include "core/error.h"
#include "experiments/config/prompt_set.h"
#include "experiments_test_util.h"

namespace speclab {
namespace {

using testing_util::ScratchDir;

std::string error_of(const std::string& path, int limit = 0) {
  try {
    prompt_set_load(path, limit);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(PromptSet, LoadsFieldsInOrderWithLimit) {
  ScratchDir dir;
  const std::string path =
      dir.write("p.jsonl",
                "{\"id\": \"a\", \"task\": \"chat\", \"text\": \"Hi\\nthere\", \"source\": \"s\", "
                "\"license\": \"CC0-1.0\", \"difficulty\": 3}\n"
                "\n"
                "{\"id\": \"b\", \"text\": \"Two\"}\r\n"
                "{\"id\": \"c\", \"text\": \"Three\"}\n");
  const auto all = prompt_set_load(path);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id, "a");
  EXPECT_EQ(all[0].text, "Hi\nthere");
  EXPECT_EQ(all[0].task, "chat");
  EXPECT_EQ(all[0].source, "s");
  EXPECT_EQ(all[0].license, "CC0-1.0");
  EXPECT_EQ(all[0].extra["difficulty"], 3);
  EXPECT_EQ(all[0].category, "chat");  // no category: the task names it
  EXPECT_EQ(all[1].task, "");
  EXPECT_EQ(all[1].category, "uncategorized");
  EXPECT_EQ(all[1].line, 3);
  EXPECT_EQ(all[2].line, 4);
  EXPECT_EQ(prompt_set_load(path, 2).size(), 2u);
  EXPECT_EQ(prompt_set_load(path, 10).size(), 3u);
}

// Two configs with skip 0 / limit N and skip N split each file into halves (held-out prompts):
// skip leaves out the first prompts of every file, then limit counts from there; a skip that
// leaves a file without prompts is an error naming the file.
TEST(PromptSet, SkipLeavesOutTheFirstPromptsOfEachFileBeforeTheLimit) {
  ScratchDir dir;
  const std::string a = dir.write("a.jsonl",
                                  "{\"id\": \"a1\", \"text\": \"x\"}\n{\"id\": \"a2\", \"text\": "
                                  "\"y\"}\n{\"id\": \"a3\", \"text\": \"z\"}\n");
  const std::string b = dir.write(
      "b.jsonl", "{\"id\": \"b1\", \"text\": \"x\"}\n{\"id\": \"b2\", \"text\": \"y\"}\n");
  const auto ids = [](const std::vector<Prompt>& ps) {
    std::string s;
    for (const auto& p : ps) s += p.id + " ";
    return s;
  };
  EXPECT_EQ(ids(prompt_set_load(a, 0, 1)), "a2 a3 ");
  EXPECT_EQ(ids(prompt_set_load(a, 1, 1)), "a2 ");
  EXPECT_EQ(prompt_set_load(a, 0, 2)[0].line, 3);  // lines still name the file's lines
  EXPECT_EQ(ids(prompt_set_load_files({a, b}, 1, 0)), "a1 b1 ");  // the first half
  EXPECT_EQ(ids(prompt_set_load_files({a, b}, 1, 1)), "a2 b2 ");  // the second half
  try {
    prompt_set_load_files({a, b}, 0, 2);
    FAIL() << "a skip past the end of b was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), b + ": prompts.skip = 2 leaves no prompts (the file has 2)");
  }
}

TEST(PromptSet, BadLinesNameFileAndLine) {
  ScratchDir dir;
  const std::string ok = "{\"id\": \"a\", \"text\": \"x\"}\n";
  EXPECT_EQ(error_of(dir.write("1.jsonl", ok + "{\"id\": \"b\", \"text\": \n")),
            dir.file("1.jsonl") +
                ":2: not valid JSON (syntax error while parsing value - "
                "unexpected end of input; expected '[', '{', or a literal)");
  EXPECT_EQ(error_of(dir.write("2.jsonl", ok + "{\"text\": \"y\"}\n")),
            dir.file("2.jsonl") + ":2: missing key \"id\" (expected a string)");
  EXPECT_EQ(error_of(dir.write("3.jsonl", ok + "{\"id\": \"b\"}\n")),
            dir.file("3.jsonl") + ":2: missing key \"text\" (expected a string)");
  EXPECT_EQ(error_of(dir.write("4.jsonl", ok + "{\"id\": 7, \"text\": \"y\"}\n")),
            dir.file("4.jsonl") + ":2: key \"id\": expected a string, got 7");
  EXPECT_EQ(error_of(dir.write("5.jsonl", ok + ok)),
            dir.file("5.jsonl") + ":2: duplicate id \"a\" (first at line 1)");
  // Seen: a key twice in one line kept the last ({"id":"a",...,"id":"b"} was prompt "b"), and
  // an id holding a newline split the output lines that name it.
  EXPECT_EQ(
      error_of(dir.write("5b.jsonl", ok + "{\"id\": \"b\", \"text\": \"y\", \"id\": \"c\"}\n")),
      dir.file("5b.jsonl") + ":2: key \"id\" appears twice in one object (expected each once)");
  EXPECT_EQ(error_of(dir.write("5c.jsonl", ok + "{\"id\": \"a\\nb\", \"text\": \"y\"}\n")),
            dir.file("5c.jsonl") +
                ":2: key \"id\": expected a non-empty id without control characters (it labels "
                "output lines), got \"a\\nb\"");
  EXPECT_EQ(error_of(dir.write("6.jsonl", ok + "[1, 2]\n")),
            dir.file("6.jsonl") + ":2: expected a JSON object {\"id\", \"text\", ...}");
  EXPECT_EQ(error_of(dir.write("7.jsonl", ok + "{\"id\": \"b\", \"text\": \"\"}\n")),
            dir.file("7.jsonl") + ":2: key \"text\": expected a non-empty string");
  EXPECT_EQ(error_of(dir.write("8.jsonl", ok + "{\"id\": \"b\", \"text\": \"y\", \"task\": 1}\n")),
            dir.file("8.jsonl") + ":2: key \"task\": expected a string, got 1");
  EXPECT_EQ(
      error_of(dir.write("9.jsonl", ok + "{\"id\": \"b\", \"text\": \"y\", \"category\": 3}\n")),
      dir.file("9.jsonl") + ":2: key \"category\": expected a string, got 3");
  EXPECT_EQ(error_of(dir.write("10.jsonl",
                               ok + "{\"id\": \"b\", \"text\": \"y\", \"category\": \"\"}\n")),
            dir.file("10.jsonl") +
                ":2: key \"category\": expected a name of 1-40 characters [A-Za-z0-9._-], got "
                "\"\"");
  EXPECT_EQ(error_of(dir.write("11.jsonl", ok + "{\"id\": \"b\", \"text\": \"y\", "
                                                "\"category\": \"open chat\"}\n")),
            dir.file("11.jsonl") +
                ":2: key \"category\": expected a name of 1-40 characters [A-Za-z0-9._-], got "
                "\"open chat\"");
  EXPECT_EQ(error_of(dir.write("empty.jsonl", "\n\n")),
            dir.file("empty.jsonl") +
                ": no prompts (expected JSONL, one {\"id\", \"text\"} object per line)");
  EXPECT_EQ(error_of(dir.file("missing.jsonl")),
            dir.file("missing.jsonl") + ": cannot open prompt file (no such file)");
}

TEST(PromptSet, SeveralFilesKeepOrderAndRejectSharedIds) {
  ScratchDir dir;
  const std::string a = dir.write(
      "a.jsonl", "{\"id\": \"a1\", \"text\": \"x\"}\n{\"id\": \"a2\", \"text\": \"y\"}\n");
  const std::string b = dir.write("b.jsonl", "{\"id\": \"b1\", \"text\": \"z\"}\n");
  const auto both = prompt_set_load_files({a, b}, 1);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].id, "a1");
  EXPECT_EQ(both[1].id, "b1");
  EXPECT_EQ(both[1].file, b);
  const std::string c = dir.write("c.jsonl", "{\"id\": \"a2\", \"text\": \"w\"}\n");
  try {
    prompt_set_load_files({a, c});
    FAIL() << "shared id accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), c + ":1: duplicate id \"a2\" (also at " + a + ":2)");
  }
}

TEST(PromptSet, CategoryGiven) {
  ScratchDir dir;
  const auto p = prompt_set_load(
      dir.write("c.jsonl",
                "{\"id\": \"a\", \"text\": \"x\", \"task\": \"t\", \"category\": \"qa\"}\n"
                "{\"id\": \"b\", \"text\": \"y\", \"task\": \"not a name\"}\n"));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].category, "qa");
  EXPECT_EQ(p[0].task, "t");
  EXPECT_FALSE(p[0].extra.contains("category"));
  EXPECT_EQ(p[1].category, "uncategorized");
}

TEST(PromptSet, ShippedSetsLoadWithTheirCategory) {
  const std::vector<std::pair<const char*, const char*>> sets{
      {"tiny-in-domain", "continuation"},
      {"tiny-out-of-domain", "continuation"},
      {"chat", "chat"},
      {"rewrite", "rewriting"},
      {"summarization", "summarization"},
      {"rewriting", "rewriting"},
      {"extraction", "extraction"},
      {"qa", "qa"},
      {"chat-passage", "chat"},
      {"continuation", "continuation"}};
  for (const auto& [name, category] : sets) {
    const auto prompts =
        prompt_set_load(std::string(SPECLAB_SOURCE_DIR "/configs/prompts/") + name + ".jsonl");
    EXPECT_FALSE(prompts.empty()) << name;
    for (const auto& p : prompts) EXPECT_EQ(p.category, category) << name << " " << p.id;
  }
}

}  // namespace
}  // namespace speclab
