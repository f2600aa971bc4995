#pragma once
// The views draw core's analysis of a variant (core/analysis/variant_analysis.h).

#include "core/analysis/variant_analysis.h"

namespace tilepath::ui {

using analysis::VariantAnalysis;

}  // namespace tilepath::ui
