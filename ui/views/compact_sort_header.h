#pragma once
// A horizontal header whose sections leave the sort arrow room for the arrow itself.
// QHeaderView widens every section of a sortable header by the section's height, which is
// right for one-line headers but leaves ~50 px of blank beside the text of a three-line one
// (the break-even table's headers name their units on a line of their own).

#include <QHeaderView>

namespace tilepath::ui {

class CompactSortHeader : public QHeaderView {
  Q_OBJECT
 public:
  explicit CompactSortHeader(QWidget* parent = nullptr);

 protected:
  QSize sectionSizeFromContents(int logicalIndex) const override;
};

}  // namespace tilepath::ui
