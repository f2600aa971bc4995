#pragma once
// One colour per variant label ("k8v8/fp8_qk/k_only", "k8v8/transform/full/prebias", ...),
// fixed by the label alone so a variant looks the same in every map, every database and
// every session, whichever other variants are shown beside it.

#include <QColor>
#include <QString>

namespace tilepath::ui {

// The twelve dtype/path/mode variants and their pre-biased FP8-K forms have colours of
// their own, all distinct (Kelly's colours of maximum contrast and a teal); any other label (a
// non-default RoPE layout, scale or split count) takes a darker shade of one of them,
// chosen by a hash of the label, so two such labels can share a colour.
QColor variantColour(const QString& label);
// Black or white, whichever reads better on fill.
QColor textColourOn(const QColor& fill);

}  // namespace tilepath::ui
