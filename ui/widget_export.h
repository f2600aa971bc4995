#pragma once
// Saving what a view shows: PNG (raster grab) or SVG (vector, QSvgGenerator).

#include <QImage>
#include <QString>

class QWidget;

namespace tilepath::ui {

// Renders widget at its current size, in device pixels (its size times the screen's scale
// factor), into an image (works offscreen).
QImage renderWidget(QWidget& widget);
// Format from the suffix: .svg → SVG, anything else → PNG. false + *error on failure.
bool exportWidget(QWidget& widget, const QString& path, QString* error);
// Number of distinct colours in the image (sampled on a grid); a blank render has 1.
int distinctColours(const QImage& image, int maxSamples = 20000);

}  // namespace tilepath::ui
