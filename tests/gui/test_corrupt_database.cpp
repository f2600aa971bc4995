// Opening a file that is not a run database shows the store's reason, keeps the
// database that was open, and leaves the file byte-for-byte unchanged.

#include <QFile>
#include <QMessageBox>
#include <QRandomGenerator>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QtTest>

#include "fixture_db.h"
#include "ui/database_session.h"
#include "ui/main_window.h"

using namespace tilepath;
using namespace tilepath::ui;

class TestCorruptDatabase : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void randomBytesAreRejected() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString good = dir.filePath(QStringLiteral("good.sqlite"));
    test::writeFixtureDatabase(good.toStdString());
    const QString bad = dir.filePath(QStringLiteral("corrupt.sqlite"));
    QByteArray bytes(64 * 1024, Qt::Uninitialized);
    QRandomGenerator rng(12345);
    for (char& c : bytes) c = static_cast<char>(rng.bounded(256));
    {
      QFile f(bad);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(bytes);
    }

    MainWindow::Options options;
    options.restoreSettings = false;
    options.interactiveErrors = true;  // the user-facing path: a message box
    MainWindow window(options);
    QVERIFY(window.openDatabase(good));
    const auto cases_before = window.session()->cases().size();
    QVERIFY(cases_before > 0);

    QVERIFY(!window.openDatabase(bad));
    QVERIFY(window.lastError().contains(QStringLiteral("corrupt.sqlite")));
    auto* box = window.findChild<QMessageBox*>();
    QVERIFY2(box, "an error message box must be shown");
    QVERIFY(box->isVisible());
    QVERIFY(box->text().contains(QStringLiteral("corrupt.sqlite")));
    box->close();

    // The good database stays open with its cases.
    QCOMPARE(window.session()->path(), good);
    QCOMPARE(window.session()->cases().size(), cases_before);

    // The corrupt file is untouched and no side files were left behind.
    QFile f(bad);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), bytes);
    QVERIFY(!QFile::exists(bad + QStringLiteral("-wal")));
  }

  void missingDirectoryIsRejected() {
    DatabaseSession session;
    QString error;
    QVERIFY(!session.open(QStringLiteral("/nonexistent-dir/none.sqlite"), &error));
    QVERIFY(!error.isEmpty());
    QVERIFY(!session.isOpen());
  }
};

QTEST_MAIN(TestCorruptDatabase)
#include "test_corrupt_database.moc"
