#pragma once
// A one-line label that elides its text to the room it is given (the whole text on hover),
// so that it can share a row, such as the status bar, without pushing or overlapping the
// widgets beside it.

#include <QLabel>

namespace tilepath::ui {

class ElidedLabel : public QLabel {
  Q_OBJECT
 public:
  explicit ElidedLabel(Qt::TextElideMode mode = Qt::ElideRight, QWidget* parent = nullptr);
  void setFullText(const QString& text);
  QString fullText() const { return full_text_; }
  QSize sizeHint() const override;         // the whole text
  QSize minimumSizeHint() const override;  // a few characters

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  QString full_text_;
  Qt::TextElideMode mode_;
  void elide();
};

}  // namespace tilepath::ui
