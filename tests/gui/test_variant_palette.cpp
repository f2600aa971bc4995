// The variant palette: every dtype control has a hue family of its own, path and mode pick
// the shade inside it, and every variant of the sweep has a colour no other variant has.

#include <QColor>
#include <QtTest>

#include "ui/views/variant_palette.h"

using namespace tilepath::ui;

namespace {
// The variants a full sweep stores (dtype/path/mode, pre-biased FP8 K, wgmma).
const char* const kVariants[] = {
    "k8v8/fp8_qk/full",
    "k8v8/fp8_qk/k_only",
    "k8v8/fp8_qk/separate_kv",
    "k8v8/transform/full",
    "k8v8/transform/k_only",
    "k8v8/transform/separate_kv",
    "k8v8/fp8_qk/full/prebias",
    "k8v8/fp8_qk/k_only/prebias",
    "k8v8/fp8_qk/separate_kv/prebias",
    "k8v8/transform/full/prebias",
    "k8v8/transform/k_only/prebias",
    "k8v8/transform/separate_kv/prebias",
    "k8v8/fp8_qk/full/wgmma",
    "k8v8/fp8_qk/k_only/wgmma",
    "k16v8/k16/full",
    "k16v8/k16/k_only",
    "k16v8/k16/separate_kv",
    "k8v16/transform/full",
    "k8v16/transform/separate_kv",
    "k8v16/fp8_qk",
    "k8v16/transform/full/prebias",
    "k8v16/fp8_qk/prebias",
    "k8v16/transform/separate_kv/prebias",
    "k16v16/k16",
    "k16v16/k16/wgmma",
};

bool inFamily(const QColor& colour, std::pair<int, int> family) {
  const int hue = colour.hslHue();
  return hue >= family.first && hue < family.second;
}
}  // namespace

class TestVariantPalette : public QObject {
  Q_OBJECT
 private slots:
  void everyDtypeHasAHueFamilyOfItsOwn() {
    const QString dtypes[] = {QStringLiteral("k8v8"), QStringLiteral("k8v16"), QStringLiteral("k16v8"),
                              QStringLiteral("k16v16")};
    for (const QString& a : dtypes)
      for (const QString& b : dtypes) {
        if (a == b) continue;
        const auto fa = variantHueFamily(a), fb = variantHueFamily(b);
        QVERIFY2(fa.second <= fb.first || fb.second <= fa.first, qPrintable(a + QStringLiteral(" overlaps ") + b));
      }
    for (const char* v : kVariants) {
      const QString label = QLatin1String(v);
      QVERIFY2(variantHueFamily(label).first >= 0, v);
      QVERIFY2(inFamily(variantColour(label), variantHueFamily(label)),
               qPrintable(QStringLiteral("%1: hue %2").arg(label).arg(variantColour(label).hslHue())));
    }
    // What a dispatch table adds to a label (RoPE layout, scale, splits) keeps the family.
    const QString odd = QStringLiteral("k16v8/k16/full/pre_rope/per_head/sp4");
    QVERIFY(inFamily(variantColour(odd), variantHueFamily(QStringLiteral("k16v8"))));
  }

  void modeSetsTheShadeAndEveryVariantDiffers() {
    // Full darkest, separate_kv lightest, on the same hue.
    const QColor full = variantColour(QStringLiteral("k8v8/transform/full"));
    const QColor k_only = variantColour(QStringLiteral("k8v8/transform/k_only"));
    const QColor separate = variantColour(QStringLiteral("k8v8/transform/separate_kv"));
    QVERIFY(std::abs(full.hslHue() - separate.hslHue()) <= 2);  // 8-bit RGB rounds the hue
    QVERIFY(full.lightnessF() < k_only.lightnessF() && k_only.lightnessF() < separate.lightnessF());
    for (const char* a : kVariants)
      for (const char* b : kVariants)
        if (qstrcmp(a, b) != 0)
          QVERIFY2(variantColour(QLatin1String(a)) != variantColour(QLatin1String(b)),
                   qPrintable(QStringLiteral("%1 and %2 share a colour").arg(a, b)));
    // Fixed by the label alone.
    QCOMPARE(variantColour(QStringLiteral("k8v16/fp8_qk")), variantColour(QStringLiteral("k8v16/fp8_qk")));
  }

  void labelsOfNoDtypeStillGetAColour() {
    const QColor c = variantColour(QStringLiteral("gaussian"));
    QVERIFY(c.isValid());
    QCOMPARE(variantHueFamily(QStringLiteral("gaussian")), std::make_pair(-1, -1));
  }
};

QTEST_MAIN(TestVariantPalette)
#include "test_variant_palette.moc"
