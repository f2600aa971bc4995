#include "ui/views/variant_palette.h"

#include <cstdint>
#include <iterator>

namespace tilepath::ui {

namespace {

struct VariantColour {
  const char* label;
  QColor colour;
};

// The K8/V8 variants (the usual winners) get the strongest contrasts, the controls the rest.
const VariantColour kFixed[] = {
    {"k8v8/fp8_qk/full", QColor(0x00, 0x67, 0xa5)},                     // blue
    {"k8v8/fp8_qk/k_only", QColor(0xf3, 0x84, 0x00)},                   // orange
    {"k8v8/fp8_qk/separate_kv", QColor(0xf3, 0xc3, 0x00)},              // yellow
    {"k8v8/transform/full", QColor(0x00, 0x88, 0x56)},                  // green
    {"k8v8/transform/k_only", QColor(0xbe, 0x00, 0x32)},                // red
    {"k8v8/transform/separate_kv", QColor(0x87, 0x56, 0x92)},           // purple
    {"k16v8/k16/full", QColor(0xc2, 0xb2, 0x80)},                       // buff
    {"k16v8/k16/separate_kv", QColor(0x88, 0x2d, 0x17)},                // reddish brown
    {"k8v16/transform/full", QColor(0xa1, 0xca, 0xf1)},                 // light blue
    {"k8v16/transform/separate_kv", QColor(0x60, 0x4e, 0x97)},          // violet
    {"k8v16/fp8_qk", QColor(0xe6, 0x8f, 0xac)},                         // purplish pink
    {"k16v16/k16", QColor(0x84, 0x84, 0x82)},                           // grey
    {"k8v8/fp8_qk/full/prebias", QColor(0xf9, 0x93, 0x79)},             // yellowish pink
    {"k8v8/fp8_qk/k_only/prebias", QColor(0xf6, 0xa6, 0x00)},           // orange yellow
    {"k8v8/fp8_qk/separate_kv/prebias", QColor(0xdc, 0xd3, 0x00)},      // greenish yellow
    {"k8v8/transform/full/prebias", QColor(0x8d, 0xb6, 0x00)},          // yellow green
    {"k8v8/transform/k_only/prebias", QColor(0xb3, 0x44, 0x6c)},        // purplish red
    {"k8v8/transform/separate_kv/prebias", QColor(0x65, 0x45, 0x22)},   // yellowish brown
    {"k8v16/transform/full/prebias", QColor(0xe2, 0x58, 0x22)},         // reddish orange
    {"k8v16/fp8_qk/prebias", QColor(0x2b, 0x3d, 0x26)},                 // olive green
    {"k8v16/transform/separate_kv/prebias", QColor(0x17, 0xbe, 0xcf)},  // teal (Kelly's list has no 21st)
};

// FNV-1a: stable across runs and platforms, unlike qHash (seeded per process).
std::uint32_t stableHash(const QString& text) {
  std::uint32_t h = 2166136261u;
  for (char c : text.toUtf8()) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

}  // namespace

QColor variantColour(const QString& label) {
  for (const VariantColour& v : kFixed)
    if (label == QLatin1String(v.label)) return v.colour;
  return kFixed[stableHash(label) % std::size(kFixed)].colour.darker(160);
}

QColor textColourOn(const QColor& fill) {
  // Perceived brightness (Rec. 709 weights on the encoded values): yellows and light blues take black text.
  const double luminance = 0.2126 * fill.redF() + 0.7152 * fill.greenF() + 0.0722 * fill.blueF();
  return luminance > 0.45 ? Qt::black : Qt::white;
}

}  // namespace tilepath::ui
