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
// Where a save dialog starts: file_name in the user's documents folder
// (QStandardPaths::DocumentsLocation), never the working directory the GUI was started from.
QString documentsPath(const QString& file_name);
// Number of distinct colours in the image (sampled on a grid); a blank render has 1.
int distinctColours(const QImage& image, int maxSamples = 20000);

}  // namespace tilepath::ui
