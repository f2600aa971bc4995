#include "ui/views/variant_palette.h"

#include <cstdint>
#include <utility>

#include <QStringList>

namespace tilepath::ui {

namespace {

struct HueFamily {
  const char* dtype;
  int hue_low, hue_high;  // degrees; the families never overlap
  double saturation;
};

// K8/V8 (the usual winners) gets the widest band; the controls take the bands furthest from it.
const HueFamily kFamilies[] = {
    {"k8v8", 185, 255, 0.85},
    {"k8v16", 75, 160, 0.80},
    {"k16v8", 10, 48, 0.90},
    {"k16v16", 280, 330, 0.55},
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

const HueFamily* familyOf(const QString& label) {
  const QString dtype = label.section(QLatin1Char('/'), 0, 0);
  for (const HueFamily& f : kFamilies)
    if (dtype == QLatin1String(f.dtype)) return &f;
  return nullptr;
}

}  // namespace

std::pair<int, int> variantHueFamily(const QString& label) {
  const HueFamily* f = familyOf(label);
  return f ? std::pair{f->hue_low, f->hue_high} : std::pair{-1, -1};
}

QColor variantColour(const QString& label) {
  const HueFamily* family = familyOf(label);
  // As 8-bit RGB: what an image pixel of the colour reads back as.
  if (!family) return QColor(QColor::fromHslF((stableHash(label) % 360) / 360.0, 0.35, 0.42).rgb());

  bool fp8_qk = false, prebias = false, wgmma = false;
  double lightness = 0.40;  // no mode (K16 paths, fp8_qk of K8/V16)
  QStringList rest;         // what the label holds beyond dtype/path/mode/prebias/mma
  const QStringList parts = label.split(QLatin1Char('/'));
  for (qsizetype i = 1; i < parts.size(); ++i) {
    const QString& part = parts[i];
    if (part == QLatin1String("fp8_qk"))
      fp8_qk = true;
    else if (part == QLatin1String("transform") || part == QLatin1String("k16") || part == QLatin1String("mma_sync") ||
             part == QLatin1String("plain"))
      continue;
    else if (part == QLatin1String("full"))
      lightness = 0.30;
    else if (part == QLatin1String("k_only"))
      lightness = 0.45;
    else if (part == QLatin1String("separate_kv"))
      lightness = 0.60;
    else if (part == QLatin1String("prebias"))
      prebias = true;
    else if (part == QLatin1String("wgmma"))
      wgmma = true;
    else
      rest << part;
  }
  // Four hue bands per family: (transform or k16, fp8_qk) × (plain, pre-biased K).
  const double band = (family->hue_high - family->hue_low) / 4.0;
  double hue = family->hue_low + band * ((fp8_qk ? 2 : 0) + (prebias ? 1 : 0)) + band / 2;
  if (!rest.isEmpty()) hue += band * ((stableHash(rest.join(QLatin1Char('/'))) % 5) - 2) / 6.0;
  if (wgmma) lightness += 0.07;
  return QColor(QColor::fromHslF(hue / 360.0, family->saturation, lightness).rgb());
}

QColor textColourOn(const QColor& fill) {
  // Perceived brightness (Rec. 709 weights on the encoded values): yellows and light blues take black text.
  const double luminance = 0.2126 * fill.redF() + 0.7152 * fill.greenF() + 0.0722 * fill.blueF();
  return luminance > 0.45 ? Qt::black : Qt::white;
}

}  // namespace tilepath::ui
