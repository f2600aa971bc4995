// Saving what a view shows: save dialogs start in the user's documents folder, not in the
// directory the GUI happened to be started from.

#include <QDir>
#include <QStandardPaths>
#include <QtTest>

#include "ui/widget_export.h"

using namespace tilepath::ui;

class TestWidgetExport : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void saveDialogsStartInTheDocumentsFolder() {
    const QString documents = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    QVERIFY(!documents.isEmpty());
    QVERIFY(QDir(documents).absolutePath() != QDir::currentPath());
    const QString path = documentsPath(QStringLiteral("Charts.png"));
    QCOMPARE(QFileInfo(path).fileName(), QStringLiteral("Charts.png"));
    QCOMPARE(QFileInfo(path).absolutePath(), QDir(documents).absolutePath());
    // No file name: the folder itself, so the dialog opens in it.
    QCOMPARE(QDir(documentsPath(QString())).absolutePath(), QDir(documents).absolutePath());
  }
};

QTEST_MAIN(TestWidgetExport)
#include "test_widget_export.moc"
