#pragma once
// Sort arrows that point the way the rows run, on every platform: ▲ when the rows ascend
// (smallest first), ▼ when they descend. Qt's Fusion style on Linux draws the opposite
// (GTK's convention), which reads as the wrong order beside the usual ▲-ascending.

#include <QProxyStyle>

class QHeaderView;

namespace tilepath::ui {

class SortArrowStyle : public QProxyStyle {
  Q_OBJECT
 public:
  using QProxyStyle::QProxyStyle;
  void drawPrimitive(PrimitiveElement element, const QStyleOption* option, QPainter* painter,
                     const QWidget* widget = nullptr) const override;
};

// Gives the header the style above (owned by the header).
void useOrderPointingSortArrows(QHeaderView* header);

}  // namespace tilepath::ui
