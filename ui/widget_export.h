#pragma once
// Saving what a view shows: PNG (raster grab) or SVG (vector, QSvgGenerator).

#include <QImage>
#include <QSize>
#include <QString>

class QPainter;
class QWidget;

namespace tilepath::ui {

// A view whose export is a drawing of its own rather than the whole widget: the charts
// without their combo boxes, legend check boxes and scroll bars.
class ExportableView {
 public:
  virtual ~ExportableView() = default;
  virtual QSize exportSize() const = 0;              // in pixels
  virtual void renderExport(QPainter& painter) = 0;  // draws into (0, 0)–exportSize()
};

// Renders widget at its current size, in device pixels (its size times the screen's scale
// factor), into an image (works offscreen).
QImage renderWidget(QWidget& widget);
// What an export of widget holds: its ExportableView drawing where it has one, else
// renderWidget(widget).
QImage renderForExport(QWidget& widget);
// Format from the suffix: .svg → SVG, anything else → PNG; an ExportableView writes its
// own drawing. false + *error on failure.
bool exportWidget(QWidget& widget, const QString& path, QString* error);
// Where a save dialog starts: file_name in the user's documents folder
// (QStandardPaths::DocumentsLocation), never the working directory the GUI was started from.
QString documentsPath(const QString& file_name);
// Number of distinct colours in the image (sampled on a grid); a blank render has 1.
int distinctColours(const QImage& image, int maxSamples = 20000);

}  // namespace tilepath::ui
