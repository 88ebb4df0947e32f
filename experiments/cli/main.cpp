// speclab: the one executable. Verbs live in cmd_<verb>.cpp.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "core/cpu_matmul.h"
#include "core/error.h"
#include "core/memory_available.h"
#include "experiments/cli/commands.h"

namespace {

// Every verb's --help lists each option with its default: CLI11 prints "=VALUE" after the
// type for captured defaults; flags, and options without a value by default whose text does
// not already say what the default means, get it in words.
void describe_defaults(CLI::App& app) {
  for (CLI::App* verb : app.get_subcommands({})) {
    for (CLI::Option* opt : verb->get_options({})) {
      if (opt == verb->get_help_ptr() || opt->get_required() || opt->get_positional()) continue;
      if (opt->get_expected_max() == 0) {  // a flag
        opt->description(opt->get_description() + " [default: off]");
      } else if (opt->get_default_str().empty() &&
                 opt->get_description().find("default") == std::string::npos) {
        opt->description(opt->get_description() + " [default: unset]");
      }
    }
  }
}

// An empty value (--out '', --trace '', --profiles '') was taken as the option not given and
// silently became its default: every option that takes a value refuses "" instead.
void refuse_empty_values(CLI::App& app) {
  const CLI::Validator non_empty(
      [](std::string& value) {
        return value.empty() ? std::string(
                                   "an empty value (expected one; leave the option out "
                                   "for its default)")
                             : std::string();
      },
      "", "non-empty");
  for (CLI::App* verb : app.get_subcommands({}))
    for (CLI::Option* opt : verb->get_options({}))
      if (opt != verb->get_help_ptr() && opt->get_expected_max() != 0) opt->check(non_empty);
}

}  // namespace

int main(int argc, char** argv) {
  // OpenMP threads that spin at barriers are catastrophic on a shared machine (a decode step
  // of a loaded 2-core box ran 10-50x slower). libgomp reads OMP_WAIT_POLICY when it loads,
  // before main, so when the user has not chosen a policy we set "passive" and re-execute
  // ourselves once; an explicit OMP_WAIT_POLICY (e.g. active on a dedicated machine) is kept.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv);  // returns only on failure: then run with the default
  }
  // A file-size limit (RLIMIT_FSIZE) would kill us with SIGXFSZ mid-write; ignored, the
  // write fails with EFBIG and is reported like a full disk (one line, no torn output).
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"speclab: a laboratory for speculative decoding"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("speclab ") + SPECLAB_GIT_COMMIT);
  app.option_defaults()->always_capture_default();  // the verbs inherit this
  speclab::register_generate(app);
  speclab::register_inspect(app);
  speclab::register_tokenize(app);
  speclab::register_simulate(app);
  speclab::register_run(app);
  speclab::register_table(app);
  speclab::register_check(app);
  speclab::register_ngram(app);
  speclab::register_merge(app);
  speclab::register_predict(app);
  speclab::register_config_reference(app);
  speclab::register_result_fields(app);
  describe_defaults(app);
  refuse_empty_values(app);
  try {
    speclab::matmul_check_environment();  // a misspelt kernel setting must not run as the default
    speclab::memory_check_environment();
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Bad arguments are bad input: one line, exit code 2.
    std::fprintf(stderr, "speclab: arguments: %s (see speclab --help)\n",
                 speclab::detail::one_line(e.what()).c_str());
    return 2;
  } catch (const speclab::InputError& e) {
    std::fprintf(stderr, "speclab: %s\n", e.what());
    return 2;
  } catch (const speclab::Interrupted& e) {
    std::fprintf(stderr, "speclab: %s\n", speclab::detail::one_line(e.what()).c_str());
    return e.exit_code;
  } catch (const speclab::CheckFailed& e) {
    std::fprintf(stderr, "speclab: check failed: %s\n",
                 speclab::detail::one_line(e.what()).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "speclab: internal error: %s\n",
                 speclab::detail::one_line(e.what()).c_str());
    return 3;
  }
  return 0;
}
