// The GUI starts on the user's own copy of the bundled H200 database, so the
// shipped file is never modified and the user's runs in the copy are never lost.
#include <QCryptographicHash>
#include <QFile>
#include <QStandardPaths>
#include <QtTest>

#include "core/store/run_store.h"
#include "ui/startup.h"

using namespace tilepath;

namespace {

QByteArray fileHash(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256);
}

}  // namespace

class StartupDatabaseTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    QFile::remove(QDir(dir).filePath(QStringLiteral("h200-sweep.sqlite")));
  }

  void copiesTheBundledDatabaseAndLeavesItUntouched() {
    const QString bundled = ui::bundledDatabasePath();
    if (bundled.isEmpty()) QSKIP("no bundled data/h200-sweep.sqlite in this tree");
    const QByteArray before = fileHash(bundled);
    QString error;
    const QString copy = ui::workingCopyOfBundledDatabase(&error);
    QVERIFY2(!copy.isEmpty(), qPrintable(error));
    QVERIFY(copy != bundled);
    {
      // Opening read-write (WAL) and adding a run happens in the copy only.
      RunStore store = RunStore::open(copy.toStdString());
      QVERIFY(store.case_count() > 0);
      RunInfo run;
      run.backend = "test";
      store.begin_run(run);
    }
    QCOMPARE(fileHash(bundled), before);

    // A second start keeps the existing copy (with the user's run) instead of overwriting it.
    const QString again = ui::workingCopyOfBundledDatabase(&error);
    QCOMPARE(again, copy);
    RunStore store = RunStore::open_read_only(again.toStdString());
    bool found = false;
    for (const auto& r : store.runs()) found = found || r.backend == "test";
    QVERIFY2(found, "the user's run in the working copy was lost");
  }
};

QTEST_MAIN(StartupDatabaseTest)
#include "test_startup_database.moc"
