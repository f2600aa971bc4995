// Layout of the main window on small and scaled screens: the operating-point dock stays
// usable at 1024×700 (scrollable, every label whole, every field reachable), a field marked
// invalid keeps its spin-box arrows, status-bar messages never overlap the database label,
// and --screenshot writes the window at the screen's scale factor. CMake runs this test
// twice: as it is and with QT_SCALE_FACTOR=1.5.

#include <QDockWidget>
#include <QFormLayout>
#include <QImage>
#include <QLabel>
#include <QProcess>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QtTest>

#include "fixture_db.h"
#include "ui/main_window.h"
#include "ui/views/op_editor.h"

using namespace tilepath;
using namespace tilepath::ui;

namespace {

// Dark pixels (the arrows; the digits are on the left) in the spin box's rightmost strip.
int darkPixelsInArrowStrip(QSpinBox* spin) {
  QImage image(spin->size(), QImage::Format_ARGB32);
  image.fill(Qt::white);
  spin->render(&image);
  int dark = 0;
  for (int y = 4; y < image.height() - 4; ++y)
    for (int x = image.width() - 14; x < image.width() - 3; ++x)
      if (QColor(image.pixel(x, y)).lightness() < 100) ++dark;
  return dark;
}

}  // namespace

class TestLayout : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir_;

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
  }

  void invalidSpinBoxKeepsItsArrows() {
    OpEditor editor;
    editor.resize(360, 700);
    editor.show();
    auto* head_dim = editor.findChild<QSpinBox*>(QStringLiteral("field_head_dim"));
    QVERIFY(head_dim);
    const int valid_dark = darkPixelsInArrowStrip(head_dim);
    QVERIFY2(valid_dark > 0, "the valid spin box draws arrows (the measure sees them)");
    head_dim->setValue(96);  // not a supported head dim: marked invalid
    QVERIFY(!editor.fieldProblem(QStringLiteral("head_dim")).isEmpty());
    const int invalid_dark = darkPixelsInArrowStrip(head_dim);
    QVERIFY2(invalid_dark >= valid_dark / 2,
             qPrintable(QStringLiteral("arrows lost when marked invalid: %1 dark pixels, %2 when valid")
                            .arg(invalid_dark)
                            .arg(valid_dark)));
    // Still visibly marked: the invalid rendering differs from the valid one.
    QImage marked(head_dim->size(), QImage::Format_ARGB32);
    marked.fill(Qt::white);
    head_dim->render(&marked);
    head_dim->setValue(128);
    QImage clean(head_dim->size(), QImage::Format_ARGB32);
    clean.fill(Qt::white);
    head_dim->render(&clean);
    QVERIFY(editor.fieldProblem(QStringLiteral("head_dim")).isEmpty());
    QVERIFY2(marked != clean, "an invalid field looks different from a valid one");
  }

  void editorDockUsableAtSmallWindow() {
    const QString db = dir_.filePath(QStringLiteral("dock.sqlite"));
    QVERIFY(test::writeFixtureDatabase(db.toStdString()) > 0);
    MainWindow::Options options;
    options.restoreSettings = false;
    options.interactiveErrors = false;
    MainWindow window(options);
    QVERIFY2(window.openDatabase(db), qPrintable(window.lastError()));
    window.resize(1024, 700);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QCOMPARE(window.size(), QSize(1024, 700));
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("operatingPointDock"));
    QVERIFY(dock);
    auto* scroll = qobject_cast<QScrollArea*>(dock->widget());
    QVERIFY(scroll);
    auto* editor = window.findChild<OpEditor*>();
    QVERIFY(editor);
    // The tabs keep most of the window.
    QVERIFY2(dock->width() < window.width() / 2, qPrintable(QStringLiteral("dock %1 px wide").arg(dock->width())));
    // Every label whole: as wide as its text needs.
    const auto labels = editor->findChildren<QLabel*>();
    int form_labels = 0;
    for (QLabel* label : labels) {
      if (label->text().isEmpty() || label->wordWrap()) continue;
      ++form_labels;
      QVERIFY2(label->width() >= label->sizeHint().width(), qPrintable(QStringLiteral("label '%1' cut: %2 px of %3")
                                                                           .arg(label->text())
                                                                           .arg(label->width())
                                                                           .arg(label->sizeHint().width())));
    }
    QVERIFY(form_labels >= 10);
    // Every field reachable: scrolled to, it lies inside the scroll area's viewport.
    for (QWidget* field : editor->findChildren<QWidget*>()) {
      if (!field->objectName().startsWith(QLatin1String("field_"))) continue;
      scroll->ensureWidgetVisible(field);
      QApplication::processEvents();
      const QRect in_viewport(field->mapTo(scroll->viewport(), QPoint(0, 0)), field->size());
      QVERIFY2(scroll->viewport()->rect().contains(in_viewport),
               qPrintable(QStringLiteral("%1 not reachable at 1024x700").arg(field->objectName())));
    }
    // No horizontal scrolling needed to read the form.
    QVERIFY2(!scroll->horizontalScrollBar()->isVisible() || scroll->horizontalScrollBar()->maximum() == 0,
             "the editor is wider than its dock");
  }

  void statusMessageLeavesTheDatabaseLabelAlone() {
    const QString db =
        dir_.filePath(QStringLiteral("a-rather-long-folder-name-for-a-status-bar/"
                                     "and-another-one-below-it/status.sqlite"));
    QVERIFY(QDir().mkpath(QFileInfo(db).path()));
    QVERIFY(test::writeFixtureDatabase(db.toStdString()) > 0);
    MainWindow::Options options;
    options.restoreSettings = false;
    options.interactiveErrors = false;
    MainWindow window(options);
    QVERIFY2(window.openDatabase(db), qPrintable(window.lastError()));
    window.resize(1024, 700);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* db_label = window.findChild<QLabel*>(QStringLiteral("databaseLabel"));
    auto* message = window.findChild<QLabel*>(QStringLiteral("statusMessage"));
    QVERIFY2(db_label && message, "the status bar has a database label and a message label");
    window.showStatusMessage(QStringLiteral("a long message that would run under the database label if the "
                                            "status bar let it: %1")
                                 .arg(QString(200, QLatin1Char('x'))));
    QApplication::processEvents();
    QVERIFY(message->isVisible());
    QVERIFY(db_label->isVisible());
    const QRect message_rect(message->mapTo(&window, QPoint(0, 0)), message->size());
    const QRect label_rect(db_label->mapTo(&window, QPoint(0, 0)), db_label->size());
    QVERIFY2(!message_rect.intersects(label_rect), "the message overlaps the database label");
    // Both stay inside the window, the message elided to its room.
    QVERIFY(window.rect().contains(label_rect));
    QVERIFY(message->fontMetrics().horizontalAdvance(message->text()) <= message->width());
    QVERIFY(message->toolTip().contains(QStringLiteral("xxxx")));  // the whole text on hover
    QVERIFY(db_label->fontMetrics().horizontalAdvance(db_label->text()) <= db_label->width());
    QVERIFY(db_label->toolTip().contains(db));
  }

  void screenshotHonoursTheScaleFactor() {
    const QString db = dir_.filePath(QStringLiteral("shot.sqlite"));
    QVERIFY(test::writeFixtureDatabase(db.toStdString()) > 0);
    const QString png = dir_.filePath(QStringLiteral("shot.png"));
    QProcess gui;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("QT_SCALE_FACTOR"), QStringLiteral("1.5"));
    env.insert(QStringLiteral("HOME"), dir_.path());
    gui.setProcessEnvironment(env);
    gui.start(QStringLiteral(TILEPATH_GUI_PATH),
              {QStringLiteral("--open"), db, QStringLiteral("--view"), QStringLiteral("graph"),
               QStringLiteral("--size"), QStringLiteral("1280x800"), QStringLiteral("--screenshot"), png});
    QVERIFY(gui.waitForFinished(120000));
    QVERIFY2(gui.exitCode() == 0, gui.readAllStandardError().constData());
    QImage image(png);
    QVERIFY(!image.isNull());
    // 1280×800 logical pixels at 1.5 device pixels each.
    QCOMPARE(image.size(), QSize(1920, 1200));
  }
};

QTEST_MAIN(TestLayout)
#include "test_layout.moc"
