#pragma once
// One colour per variant label ("k8v8/fp8_qk/k_only", "k8v8/transform/full/prebias", ...),
// fixed by the label alone so a variant looks the same in the charts, the dispatch map,
// every database and every session, whichever other variants are shown beside it.

#include <utility>

#include <QColor>
#include <QString>

namespace tilepath::ui {

// The dtype control picks a hue family: k8v8 blues, k8v16 greens, k16v8 oranges, k16v16
// purples. Within a family the K path and a pre-biased K pick the hue, the transform mode
// the lightness (full dark, k_only middle, separate_kv light), wgmma a slightly lighter
// shade. Anything more in the label (a non-default RoPE layout, scale or split count) moves
// the hue a little inside the family. A label with no known dtype (the gate's key
// distributions) takes a muted hue chosen by a hash of the label.
QColor variantColour(const QString& label);
// The family's hue range in degrees, [low, high); {-1, -1} for a label of no known dtype.
std::pair<int, int> variantHueFamily(const QString& label);
// Black or white, whichever reads better on fill.
QColor textColourOn(const QColor& fill);

}  // namespace tilepath::ui
