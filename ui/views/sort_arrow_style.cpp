#include "ui/views/sort_arrow_style.h"

#include <QHeaderView>
#include <QStyleOptionHeader>

namespace tilepath::ui {

void SortArrowStyle::drawPrimitive(PrimitiveElement element, const QStyleOption* option, QPainter* painter,
                                   const QWidget* widget) const {
  const auto* header = qobject_cast<const QHeaderView*>(widget);
  if (element != PE_IndicatorHeaderArrow || !header || !qstyleoption_cast<const QStyleOptionHeader*>(option)) {
    QProxyStyle::drawPrimitive(element, option, painter, widget);
    return;
  }
  // The header's order decides, not the option's SortUp/SortDown (whose meaning styles disagree on).
  const PrimitiveElement arrow =
      header->sortIndicatorOrder() == Qt::AscendingOrder ? PE_IndicatorArrowUp : PE_IndicatorArrowDown;
  QProxyStyle::drawPrimitive(arrow, option, painter, widget);
}

void useOrderPointingSortArrows(QHeaderView* header) {
  auto* style = new SortArrowStyle;
  style->setParent(header);
  header->setStyle(style);
}

}  // namespace tilepath::ui
