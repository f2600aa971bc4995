// Every view of the main window renders to a non-blank image at 1280×800 or
// larger (several distinct colours), over a fixture database, and the PNG/SVG
// export writes files.

#include <QFileInfo>
#include <QImage>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "fixture_db.h"
#include "ui/main_window.h"
#include "ui/widget_export.h"

using namespace tilepath;
using namespace tilepath::ui;

class TestRenderViews : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir_;
  QString db_;

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
    db_ = dir_.filePath(QStringLiteral("fixture.sqlite"));
    test::writeFixtureDatabase(db_.toStdString());
  }

  void blankImageHasOneColour() {
    QImage blank(200, 100, QImage::Format_ARGB32);
    blank.fill(Qt::white);
    QCOMPARE(distinctColours(blank), 1);
    blank.setPixel(10, 10, qRgb(255, 0, 0));
    blank.setPixel(20, 20, qRgb(0, 255, 0));
    QCOMPARE(distinctColours(blank, 200 * 100), 3);
  }

  void eachViewRenders_data() {
    QTest::addColumn<QString>("view");
    for (const QString& v : MainWindow::viewNames()) QTest::newRow(qPrintable(v)) << v;
  }
  void eachViewRenders() {
    QFETCH(QString, view);
    MainWindow::Options options;
    options.restoreSettings = false;
    options.interactiveErrors = false;
    MainWindow window(options);
    QVERIFY(window.openDatabase(db_));
    window.resize(1280, 800);
    QVERIFY(window.showView(view));
    window.show();
    QCoreApplication::processEvents();

    const QImage whole = renderWidget(window);
    QVERIFY(whole.width() >= 1280 && whole.height() >= 800);
    QVERIFY2(distinctColours(whole) >= 8,
             qPrintable(QStringLiteral("%1 rendered %2 colours").arg(view).arg(distinctColours(whole))));
    // The view area itself (not only the chrome around it) has content.
    const QImage inner = renderWidget(*window.currentViewWidget());
    QVERIFY2(distinctColours(inner) >= 4,
             qPrintable(QStringLiteral("%1 view area has %2 colours").arg(view).arg(distinctColours(inner))));

    const QString png = dir_.filePath(view + QStringLiteral(".png"));
    QString error;
    QVERIFY2(exportWidget(window, png, &error), qPrintable(error));
    QImage loaded(png);
    QCOMPARE(loaded.size(), window.size());
  }

  void svgExport() {
    MainWindow::Options options;
    options.restoreSettings = false;
    options.interactiveErrors = false;
    MainWindow window(options);
    QVERIFY(window.openDatabase(db_));
    QVERIFY(window.showView(QStringLiteral("charts")));
    window.resize(1280, 800);
    window.show();
    QCoreApplication::processEvents();
    const QString svg = dir_.filePath(QStringLiteral("charts.svg"));
    QString error;
    QVERIFY2(exportWidget(*window.currentViewWidget(), svg, &error), qPrintable(error));
    QFile f(svg);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray text = f.readAll();
    QVERIFY(text.contains("<svg"));
    QVERIFY(text.size() > 2000);
  }
};

QTEST_MAIN(TestRenderViews)
#include "test_render_views.moc"
