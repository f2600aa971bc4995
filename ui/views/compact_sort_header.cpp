#include "ui/views/compact_sort_header.h"

#include <QStyle>
#include <QStyleOptionHeader>

namespace tilepath::ui {

CompactSortHeader::CompactSortHeader(QWidget* parent) : QHeaderView(Qt::Horizontal, parent) {
  // As QTableView's own horizontal header.
  setSectionsClickable(true);
  setHighlightSections(true);
}

QSize CompactSortHeader::sectionSizeFromContents(int logicalIndex) const {
  QSize size = QHeaderView::sectionSizeFromContents(logicalIndex);
  if (!isSortIndicatorShown()) return size;
  QStyleOptionHeader option;
  initStyleOption(&option);
  const int arrow = style()->pixelMetric(QStyle::PM_HeaderMarkSize, &option, this);
  // Qt added the section's height and a margin for the arrow: the margin stays, the arrow
  // needs its own width.
  size.rwidth() += arrow - size.height();
  return size;
}

}  // namespace tilepath::ui
