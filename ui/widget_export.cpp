#include "ui/widget_export.h"

#include <algorithm>
#include <cmath>

#include <QDir>
#include <QFileInfo>
#include <QPainter>
#include <QSet>
#include <QSizeF>
#include <QStandardPaths>
#include <QSvgGenerator>
#include <QWidget>

namespace tilepath::ui {

QImage renderWidget(QWidget& widget) {
  // In device pixels, as the screen shows it: at QT_SCALE_FACTOR=1.5 a 1440×900 window is
  // 2160×1350 pixels of text and lines drawn at that resolution.
  const qreal ratio = widget.devicePixelRatioF();
  QImage image((QSizeF(widget.size()) * ratio).toSize(), QImage::Format_ARGB32);
  image.setDevicePixelRatio(ratio);
  image.fill(Qt::white);
  widget.render(&image);
  return image;
}

QImage renderForExport(QWidget& widget) {
  auto* view = dynamic_cast<ExportableView*>(&widget);
  if (!view) return renderWidget(widget);
  const qreal ratio = widget.devicePixelRatioF();
  QImage image((QSizeF(view->exportSize()) * ratio).toSize(), QImage::Format_ARGB32);
  image.setDevicePixelRatio(ratio);
  image.fill(Qt::white);
  QPainter painter(&image);
  view->renderExport(painter);
  return image;
}

bool exportWidget(QWidget& widget, const QString& path, QString* error) {
  auto* view = dynamic_cast<ExportableView*>(&widget);
  if (QFileInfo(path).suffix().compare(QLatin1String("svg"), Qt::CaseInsensitive) == 0) {
    const QSize size = view ? view->exportSize() : widget.size();
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(size);
    svg.setViewBox(QRect(QPoint(0, 0), size));
    svg.setTitle(widget.windowTitle());
    QPainter painter;
    if (!painter.begin(&svg)) {
      if (error) *error = QStringLiteral("%1: cannot write SVG").arg(path);
      return false;
    }
    if (view)
      view->renderExport(painter);
    else
      widget.render(&painter);
    painter.end();
    return true;
  }
  if (!renderForExport(widget).save(path, "PNG")) {
    if (error) *error = QStringLiteral("%1: cannot write PNG").arg(path);
    return false;
  }
  return true;
}

int distinctColours(const QImage& image, int maxSamples) {
  if (image.isNull()) return 0;
  // Sample on a regular 2-D grid of about maxSamples points.
  const double area = double(image.width()) * image.height();
  const int step = std::max(1, int(std::sqrt(area / std::max(1, maxSamples))));
  QSet<QRgb> colours;
  for (int y = 0; y < image.height(); y += step)
    for (int x = 0; x < image.width(); x += step) colours.insert(image.pixel(x, y));
  return static_cast<int>(colours.size());
}

QString documentsPath(const QString& file_name) {
  const QString dir = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
  return dir.isEmpty() ? file_name : QDir(dir).filePath(file_name);
}

}  // namespace tilepath::ui
