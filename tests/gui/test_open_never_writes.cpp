// Looking never writes: opening a database in the GUI, walking every view and taking
// a screenshot leave the file byte-identical with no -wal or -shm beside it; a read-only
// file opens; an older schema is shown through an upgraded copy and the file itself is
// upgraded only when something writes into it.
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>

#include "core/store/run_store.h"
#include "ui/database_session.h"
#include "ui/main_window.h"
#include "ui/models/cases_model.h"
#include "ui/models/sweep_series_model.h"
#include "ui/views/charts_view.h"
#include "ui/views/runs_view.h"

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

  // A file a writer left in WAL mode: looking creates no -wal or -shm beside it.
  void aFileLeftInWalModeOpensWithoutSidecars() {
    const QString path = copyOf(kBundled, QStringLiteral("wal.sqlite"));
    {
      // WAL mode persists; the last connection to close removes -wal and -shm.
      sqlite3* raw = nullptr;
      QCOMPARE(sqlite3_open(path.toUtf8().constData(), &raw), SQLITE_OK);
      QCOMPARE(sqlite3_exec(raw, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr), SQLITE_OK);
      sqlite3_close(raw);
    }
    QFile header(path);
    QVERIFY(header.open(QIODevice::ReadOnly));
    QCOMPARE(int(header.read(19).at(18)), 2);
    header.close();
    QVERIFY(!hasSidecars(path));
    const QByteArray before = fileHash(path);
    {
      ui::MainWindow window(ui::MainWindow::Options{false, false});
      QVERIFY(window.openDatabase(path));
      QVERIFY(!window.session()->cases().empty());
      QVERIFY(window.showView(QStringLiteral("runs")));
      window.session()->reload();
      QVERIFY(!hasSidecars(path));
    }
    QCOMPARE(fileHash(path), before);
    QVERIFY(!hasSidecars(path));
  }

  // Views are filled with the cases when shown: one never shown costs nothing.
  void aViewNotShownIsNotFilled() {
    const QString path = copyOf(kBundled, QStringLiteral("lazy.sqlite"));
    ui::MainWindow window(ui::MainWindow::Options{false, false});
    QVERIFY(window.showView(QStringLiteral("backends")));
    QVERIFY(window.openDatabase(path));
    const QStringList data_views = {QStringLiteral("runs"), QStringLiteral("charts"), QStringLiteral("breakeven"),
                                    QStringLiteral("dispatch"), QStringLiteral("gate")};
    for (const QString& view : data_views) QCOMPARE(window.viewFills(view), 0);
    QVERIFY(window.showView(QStringLiteral("charts")));
    QCOMPARE(window.viewFills(QStringLiteral("charts")), 1);
    QVERIFY(window.chartsView()->latencyModel()->rowCount() > 0);
    for (const QString& view : data_views)
      if (view != QLatin1String("charts")) QCOMPARE(window.viewFills(view), 0);
    // Shown again without a change: not filled again.
    QVERIFY(window.showView(QStringLiteral("backends")));
    QVERIFY(window.showView(QStringLiteral("charts")));
    QCOMPARE(window.viewFills(QStringLiteral("charts")), 1);
    // The database changed: the view on screen is filled at once, the others when shown.
    window.session()->reload();
    QCOMPARE(window.viewFills(QStringLiteral("charts")), 2);
    QCOMPARE(window.viewFills(QStringLiteral("runs")), 0);
  }

  // The window's open reads the cases on a thread: it returns before they are read, and
  // the views get them when they are.
  void aBackgroundOpenFillsTheViewsWhenTheCasesAreRead() {
    const QString path = copyOf(kBundled, QStringLiteral("background.sqlite"));
    const QByteArray before = fileHash(path);
    ui::MainWindow::Options options{false, false};
    options.loadInBackground = true;
    ui::MainWindow window(options);
    QVERIFY(window.showView(QStringLiteral("runs")));
    QSignalSpy finished(window.session(), &ui::DatabaseSession::loadingFinished);
    QVERIFY(window.openDatabase(path));
    QVERIFY(window.session()->isLoading());
    QVERIFY(window.session()->cases().empty());
    QVERIFY(!window.session()->runs().empty());  // read before the open returns
    window.session()->waitForLoad();
    QCOMPARE(finished.count(), 1);
    // Every case of the file (ok and unsupported), as the store lists them.
    const std::size_t stored = RunStore::open_read_only(path.toStdString()).cases().size();
    QVERIFY(stored > 0);
    QCOMPARE(window.session()->cases().size(), stored);
    QCOMPARE(window.runsView()->casesModel()->rowCount(), static_cast<int>(stored));
    window.close();
    QCOMPARE(fileHash(path), before);
    QVERIFY(!hasSidecars(path));

    // A writer stores a case: the reload reads on the thread again, and two reloads in a
    // row end in one list with both cases.
    const std::size_t runs = window.session()->runs().size();
    {
      RunStore writer = RunStore::open(path.toStdString());
      RunInfo run;
      run.backend = "test";
      writer.begin_run(run);
      CaseRecord rec;
      rec.case_key = "background-reload-1";
      writer.add_case(run.id, rec);
      window.session()->reload();
      QVERIFY(window.session()->isLoading());
      rec = CaseRecord{};
      rec.case_key = "background-reload-2";
      writer.add_case(run.id, rec);
      window.session()->reload();
    }
    window.session()->waitForLoad();
    QCOMPARE(window.session()->runs().size(), runs + 1);
    QCOMPARE(window.session()->cases().size(), stored + 2);
  }
};

QTEST_MAIN(OpenNeverWritesTest)
#include "test_open_never_writes.moc"
