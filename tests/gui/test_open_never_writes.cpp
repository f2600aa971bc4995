// Looking never writes: opening a database in the GUI, walking every view and taking
// a screenshot leave the file byte-identical with no -wal or -shm beside it; a read-only
// file opens; an older schema is shown through an upgraded copy and the file itself is
// upgraded only when something writes into it.
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "core/store/run_store.h"
#include "ui/database_session.h"
#include "ui/main_window.h"

using namespace tilepath;

namespace {

QByteArray fileHash(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256);
}

bool hasSidecars(const QString& path) {
  return QFile::exists(path + QStringLiteral("-wal")) || QFile::exists(path + QStringLiteral("-shm")) ||
         QFile::exists(path + QStringLiteral("-journal"));
}

const QString kBundled = QStringLiteral(TILEPATH_SOURCE_DIR "/data/h200-sweep.sqlite");
const QString kSchemaV3 = QStringLiteral(TILEPATH_SOURCE_DIR "/tests/store/fixtures/schema_v3.sqlite");

}  // namespace

class OpenNeverWritesTest : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  QString copyOf(const QString& source, const QString& name) {
    const QString path = dir_.filePath(name);
    QFile::remove(path);
    if (!QFile::copy(source, path)) return {};
    QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner);
    return path;
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
  }

  void browsingEveryViewLeavesTheFileByteIdentical() {
    const QString path = copyOf(kBundled, QStringLiteral("browse.sqlite"));
    QVERIFY(!path.isEmpty());
    const QByteArray before = fileHash(path);
    {
      ui::MainWindow window(ui::MainWindow::Options{false, false});
      window.resize(1280, 800);
      QVERIFY(window.openDatabase(path));
      window.show();
      for (const QString& view : ui::MainWindow::viewNames()) {
        QVERIFY(window.showView(view));
        QCoreApplication::processEvents();
        QVERIFY(!window.grab().isNull());
      }
      QVERIFY(!hasSidecars(path));
    }
    QCOMPARE(fileHash(path), before);
    QVERIFY(!hasSidecars(path));
  }

  void screenshotLeavesTheFileByteIdentical() {
    const QString path = copyOf(kBundled, QStringLiteral("shot.sqlite"));
    const QByteArray before = fileHash(path);
    QProcess gui;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    gui.setProcessEnvironment(env);
    gui.start(QStringLiteral(TILEPATH_GUI_PATH),
              {QStringLiteral("--open"), path, QStringLiteral("--view"), QStringLiteral("charts"),
               QStringLiteral("--screenshot"), dir_.filePath(QStringLiteral("shot.png"))});
    QVERIFY(gui.waitForFinished(120000));
    QCOMPARE(gui.exitCode(), 0);
    QVERIFY(QFile::exists(dir_.filePath(QStringLiteral("shot.png"))));
    QCOMPARE(fileHash(path), before);
    QVERIFY(!hasSidecars(path));
  }

  void aReadOnlyFileOpens() {
    const QString path = copyOf(kBundled, QStringLiteral("readonly.sqlite"));
    QFile::setPermissions(path, QFile::ReadOwner | QFile::ReadGroup | QFile::ReadOther);
    const QByteArray before = fileHash(path);
    ui::DatabaseSession session;
    QString error;
    QVERIFY2(session.open(path, &error), qPrintable(error));
    QVERIFY(!session.cases().empty());
    QVERIFY(session.loadCase(session.cases().front().case_id, true).id != 0);
    session.reload();
    session.close();
    QCOMPARE(fileHash(path), before);
  }

  // A run writes through its own connection while the view reads: the session sees it.
  void aWriterBesideTheReadOnlyViewIsSeenOnReload() {
    const QString path = copyOf(kBundled, QStringLiteral("writer.sqlite"));
    ui::DatabaseSession session;
    QString error;
    QVERIFY2(session.open(path, &error), qPrintable(error));
    const std::size_t runs = session.runs().size();
    {
      RunStore writer = RunStore::open(path.toStdString());
      RunInfo run;
      run.backend = "test";
      writer.begin_run(run);
    }
    session.reload();
    QCOMPARE(session.runs().size(), runs + 1);
    session.close();
    RunStore check = RunStore::open_read_only(path.toStdString());
    QCOMPARE(check.runs().size(), runs + 1);
  }

  void anOlderSchemaIsShownUpgradedAndUpgradedOnlyByAWrite() {
    const QString path = copyOf(kSchemaV3, QStringLiteral("v3.sqlite"));
    QVERIFY(!path.isEmpty());
    const QByteArray before = fileHash(path);
    ui::DatabaseSession session;
    QString error;
    QVERIFY2(session.open(path, &error), qPrintable(error));
    QCOMPARE(session.upgradedFromVersion(), 3);
    QCOMPARE(session.path(), path);
    QVERIFY(session.readPath() != path);
    QVERIFY(!session.cases().empty());
    // Its kernel-check rows carry their v4 names in the upgraded view.
    bool renamed = false;
    for (const CaseSummary& c : session.cases())
      for (const QualityRow& q : c.record.quality) renamed = renamed || q.metric == "kernel_check_rel_l2";
    QVERIFY(renamed);
    session.reload();
    QCOMPARE(fileHash(path), before);
    QCOMPARE(RunStore::file_schema_version(path.toStdString()), 3);

    // A merge writes: the file is upgraded then, and the session reads it directly.
    const QString other = copyOf(kBundled, QStringLiteral("other.sqlite"));
    const std::size_t cases_before = session.cases().size();
    QVERIFY(session.mergeFrom(other).runs_added > 0);
    QCOMPARE(RunStore::file_schema_version(path.toStdString()), RunStore::current_schema_version());
    QCOMPARE(session.upgradedFromVersion(), 0);
    QCOMPARE(session.readPath(), path);
    QVERIFY(session.cases().size() > cases_before);
  }
};

QTEST_MAIN(OpenNeverWritesTest)
#include "test_open_never_writes.moc"
