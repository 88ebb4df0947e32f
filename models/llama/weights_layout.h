// How a loaded model stores its BF16 matrices: plain rows, or row pairs (core/row_pairs.h), the
// layout in which the avx512 one-token product reads two rows' FMA chains from one stream.
//
// The pairs are made in place, so only where the weights are the model's own memory: synthetic
// models and weight files copied into huge pages (LlamaModel::weights_copied). A file mapped in
// place keeps its rows (a repacked mapping would be a private copy of every page). Every kernel
// path gives a paired matrix the bits of its plain rows, the CUDA upload unpairs, and a model's
// identity (its files' hash, its dtypes) does not change.
#pragma once

#include <string>

#include "models/llama/llama_model.h"

namespace speclab {

// Stores every BF16 matrix of `model` that fits (row_pairs_fit) in row pairs, if its weights are
// its own memory (above): each distinct matrix once (a tied output is the embedding table), every
// view of it marked RowLayout::kRowPairs. Returns the number of matrices repacked.
int llama_weights_store_row_pairs(LlamaModel& model);

// As llama_weights_store_row_pairs when this run stores BF16 matrices in pairs
// (matmul_bf16_row_pairs, core/cpu_matmul.h); what every loader calls last.
void llama_weights_apply_layout(LlamaModel& model);

// "row pairs" when every BF16 matrix of the model is stored in pairs, "rows" when none is (or
// the model has none), "rows and row pairs" otherwise: what a run reports beside its timings.
std::string llama_weights_layout(const LlamaModel& model);

}  // namespace speclab
