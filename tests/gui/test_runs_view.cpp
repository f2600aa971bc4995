// The Runs view: latency and floor fraction among the first columns, the comparison as
// fields × (A, B, B − A, B / A) with units and better/worse colours, the comparison emptied
// by a reload, sort indicators that say the order the rows are in (also the initial one),
// and the files kept with a case viewable (text) and savable (any).

#include <QBrush>
#include <QDialog>
#include <QFile>
#include <QHeaderView>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QStyleOptionHeader>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "fixture_db.h"
#include "ui/database_session.h"
#include "ui/models/case_comparison_model.h"
#include "ui/models/cases_model.h"
#include "ui/qt_text.h"
#include "ui/views/profiler_panel.h"
#include "ui/views/runs_view.h"

using namespace tilepath;
using namespace tilepath::ui;

namespace {

// Does the sort arrow of the header's indicator section point up? The arrow sits at the
// section's right end: a ▲ is wider in its lowest row of ink than in its highest.
bool sortArrowPointsUp(QHeaderView* header) {
  QImage image(header->size(), QImage::Format_ARGB32);
  image.fill(Qt::white);
  header->render(&image);
  const int section = header->sortIndicatorSection();
  const int right = header->sectionViewportPosition(section) + header->sectionSize(section) - 2;
  auto inkInRow = [&](int y) {
    int ink = 0;
    for (int x = right - 16; x < right; ++x)
      if (QColor(image.pixel(x, y)).lightness() < 160) ++ink;
    return ink;
  };
  int top = -1, bottom = -1;
  for (int y = 2; y < image.height() - 2; ++y)
    if (inkInRow(y) > 0) {
      if (top < 0) top = y;
      bottom = y;
    }
  if (top < 0) qWarning("no arrow ink at the right end of section %d", section);
  return top >= 0 && inkInRow(bottom) > inkInRow(top);
}

QColor foreground(const QModelIndex& index) { return index.data(Qt::ForegroundRole).value<QBrush>().color(); }

}  // namespace

class TestRunsView : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString db_;
  std::vector<CaseSummary> cases_;

  // The fixture's case of this dtype at B=8, S=4096, HBM-cold.
  CaseRecord fixtureCase(KvDtype kv) const {
    for (const CaseSummary& c : cases_)
      if (c.record.op.kv == kv && c.record.op.context == 4096 && c.record.op.cache == CacheState::hbm_cold)
        return RunStore::open_read_only(db_.toStdString()).load_case(c.case_id);
    return {};
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
    db_ = dir_.filePath(QStringLiteral("fixture.sqlite"));
    test::writeFixtureDatabase(db_.toStdString());
    RunStore store = RunStore::open(db_.toStdString());
    cases_ = store.cases();
    // The K8/V8 case keeps its raw timings and a binary blob, as `tilepath attach` stores them.
    const std::string samples = R"({"timings":{"full":{"samples_us":[30.1,29.8,30.4]}}})";
    for (const CaseSummary& c : cases_)
      if (c.record.op.kv == KvDtype::k8v8 && c.record.op.context == 4096 && c.record.op.cache == CacheState::hbm_cold) {
        store.add_artifact(c.case_id, {"samples.json", "application/json", {samples.begin(), samples.end()}});
        store.add_artifact(c.case_id, {"profile.ncu-rep", "application/octet-stream", {0x4e, 0x00, 0xff, 0x01}});
      }
  }

  void latencyAndFloorFractionAmongTheFirstColumns() {
    CasesModel model;
    auto column = [&](const QString& name) {
      for (int c = 0; c < model.columnCount(); ++c)
        if (model.headerData(c, Qt::Horizontal).toString() == name) return c;
      return -1;
    };
    QVERIFY(column(QStringLiteral("Latency (µs)")) >= 0 && column(QStringLiteral("Latency (µs)")) < 8);
    QVERIFY(column(QStringLiteral("Floor frac.")) >= 0 && column(QStringLiteral("Floor frac.")) < 9);
  }

  void comparisonIsFieldsByABDifferenceAndRatio() {
    const CaseRecord k16v16 = fixtureCase(KvDtype::k16v16), k8v8 = fixtureCase(KvDtype::k8v8);
    QVERIFY(k16v16.id > 0 && k8v8.id > 0);
    CaseComparisonModel model;
    model.setCases(k16v16, k8v8);
    QCOMPARE(model.columnCount(), 5);
    QCOMPARE(model.headerData(CaseComparisonModel::Field, Qt::Horizontal).toString(), QStringLiteral("Field"));
    QCOMPARE(model.headerData(CaseComparisonModel::CaseA, Qt::Horizontal).toString(),
             QStringLiteral("A: #%1").arg(k16v16.id));
    QCOMPARE(model.headerData(CaseComparisonModel::Difference, Qt::Horizontal).toString(), QStringLiteral("B − A"));
    QCOMPARE(model.headerData(CaseComparisonModel::Ratio, Qt::Horizontal).toString(), QStringLiteral("B / A"));

    // Latency: numbers with their unit, the difference signed, the ratio a factor; B is
    // faster, so better: green.
    const int latency = model.rowOf(QStringLiteral("Measurements"), QStringLiteral("latency_us"));
    QVERIFY(latency >= 0);
    const double a = *k16v16.measurement("latency_us"), b = *k8v8.measurement("latency_us");
    QVERIFY(b < a);
    QCOMPARE(model.index(latency, CaseComparisonModel::Field).data().toString(), QStringLiteral("latency_us"));
    QCOMPARE(model.index(latency, CaseComparisonModel::CaseA).data().toString(), formatNumber(a, 4) + " µs");
    QCOMPARE(model.index(latency, CaseComparisonModel::Difference).data().toString(), formatNumber(b - a, 4) + " µs");
    QCOMPARE(model.index(latency, CaseComparisonModel::Difference).data(CaseComparisonModel::ValueRole).toDouble(),
             b - a);
    QCOMPARE(model.index(latency, CaseComparisonModel::Ratio).data().toString(), formatNumber(b / a, 3) + "×");
    QCOMPARE(model.verdict(latency), 1);
    QCOMPARE(foreground(model.index(latency, CaseComparisonModel::Difference)), QColor(20, 120, 40));
    QCOMPARE(foreground(model.index(latency, CaseComparisonModel::Ratio)), QColor(20, 120, 40));
    // The latency and the floor fraction lead the measurements.
    QCOMPARE(model.rowOf(QStringLiteral("Measurements"), QStringLiteral("floor_fraction")), latency + 1);

    // Floor fraction: higher is better. B's is higher (50 / latency): green; swapped, red.
    const int floor = model.rowOf(QStringLiteral("Measurements"), QStringLiteral("floor_fraction"));
    QCOMPARE(model.verdict(floor), 1);
    model.setCases(k8v8, k16v16);
    QCOMPARE(model.verdict(floor), -1);
    QCOMPARE(model.verdict(latency), -1);
    QCOMPARE(foreground(model.index(latency, CaseComparisonModel::Difference)), QColor(180, 30, 30));
    QVERIFY(model.index(latency, CaseComparisonModel::Difference).data().toString().startsWith(QLatin1Char('+')));

    // Stage costs carry µs/tile and are better lower.
    const int qk = model.rowOf(QStringLiteral("Stage costs (µs/tile)"), QStringLiteral("k_load (isolated)"));
    QVERIFY(qk >= 0);
    QVERIFY(model.index(qk, CaseComparisonModel::CaseA).data().toString().endsWith(QStringLiteral(" µs/tile")));

    // A text field: both values, no difference, no ratio, no colour.
    const int kernel = model.rowOf(QStringLiteral("Kernel"), QStringLiteral("kernel_name"));
    QVERIFY(kernel >= 0);
    QCOMPARE(model.index(kernel, CaseComparisonModel::CaseA).data().toString(), QStringLiteral("fixture_k8v8"));
    QCOMPARE(model.index(kernel, CaseComparisonModel::CaseB).data().toString(), QStringLiteral("fixture_k16v16"));
    QVERIFY(!model.index(kernel, CaseComparisonModel::Difference).data().isValid());
    QVERIFY(!model.index(kernel, CaseComparisonModel::Ratio).data().isValid());
    QVERIFY(!model.index(kernel, CaseComparisonModel::Difference).data(Qt::ForegroundRole).isValid());
    // A neutral number (batch): a difference, no colour.
    const int batch = model.rowOf(QStringLiteral("Operating point"), QStringLiteral("batch"));
    QCOMPARE(model.index(batch, CaseComparisonModel::Difference).data().toString(), QStringLiteral("0"));
    QVERIFY(!model.index(batch, CaseComparisonModel::Difference).data(Qt::ForegroundRole).isValid());
  }

  void reloadEmptiesTheComparison() {
    DatabaseSession session;
    QVERIFY(session.open(db_));
    RunsView view(&session);
    view.reload();
    view.selectCases({cases_[0].case_id, cases_[2].case_id});
    QVERIFY(view.comparisonModel()->rowCount() > 0);
    QVERIFY(view.comparisonModel()->headerData(CaseComparisonModel::CaseB, Qt::Horizontal).toString().contains('#'));
    view.reload();
    QCOMPARE(view.comparisonModel()->rowCount(), 0);
    QCOMPARE(view.comparisonModel()->headerData(CaseComparisonModel::CaseA, Qt::Horizontal).toString(),
             QStringLiteral("A"));
    QCOMPARE(view.profilerPanel()->artifactList()->count(), 0);
  }

  void sortIndicatorsSayTheOrderOfTheRows() {
    DatabaseSession session;
    QVERIFY(session.open(db_));
    RunsView view(&session);
    view.resize(1400, 900);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.reload();
    QTableView* table = view.casesTable();
    QHeaderView* header = table->horizontalHeader();
    const auto* proxy = qobject_cast<const QSortFilterProxyModel*>(table->model());
    QVERIFY(proxy);
    auto rowsFollow = [&](int column, Qt::SortOrder order) {
      for (int r = 1; r < proxy->rowCount(); ++r) {
        const double previous = proxy->index(r - 1, column).data(CasesModel::SortRole).toDouble();
        const double current = proxy->index(r, column).data(CasesModel::SortRole).toDouble();
        if (order == Qt::AscendingOrder ? current < previous : current > previous) return false;
      }
      return true;
    };
    // The initial order: by case, ascending, and the indicator says so.
    QVERIFY(header->isSortIndicatorShown());
    QCOMPARE(header->sortIndicatorSection(), int(CasesModel::Id));
    QCOMPARE(header->sortIndicatorOrder(), Qt::AscendingOrder);
    QCOMPARE(proxy->sortColumn(), int(CasesModel::Id));
    QCOMPARE(proxy->sortOrder(), Qt::AscendingOrder);
    QVERIFY(rowsFollow(CasesModel::Id, Qt::AscendingOrder));
    QVERIFY2(proxy->index(0, CasesModel::Id).data().toLongLong() <
                 proxy->index(proxy->rowCount() - 1, CasesModel::Id).data().toLongLong(),
             "the first row is the smallest case id");
    QVERIFY2(sortArrowPointsUp(header), "ascending rows: the arrow points up");

    // A click on the latency header: the rows and the indicator agree, both ways.
    const int x =
        header->sectionViewportPosition(CasesModel::LatencyUs) + header->sectionSize(CasesModel::LatencyUs) / 2;
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, QPoint(x, header->height() / 2));
    QCOMPARE(header->sortIndicatorSection(), int(CasesModel::LatencyUs));
    QCOMPARE(proxy->sortColumn(), int(CasesModel::LatencyUs));
    QCOMPARE(proxy->sortOrder(), header->sortIndicatorOrder());
    QVERIFY(rowsFollow(CasesModel::LatencyUs, header->sortIndicatorOrder()));
    QCOMPARE(sortArrowPointsUp(header), header->sortIndicatorOrder() == Qt::AscendingOrder);
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, QPoint(x, header->height() / 2));
    QCOMPARE(proxy->sortOrder(), header->sortIndicatorOrder());
    QVERIFY(rowsFollow(CasesModel::LatencyUs, header->sortIndicatorOrder()));
    QCOMPARE(sortArrowPointsUp(header), header->sortIndicatorOrder() == Qt::AscendingOrder);

    // The runs table starts in a real order too.
    QHeaderView* runs_header = view.runsTable()->horizontalHeader();
    const auto* runs_proxy = qobject_cast<const QSortFilterProxyModel*>(view.runsTable()->model());
    QCOMPARE(runs_proxy->sortColumn(), runs_header->sortIndicatorSection());
    QCOMPARE(runs_proxy->sortOrder(), runs_header->sortIndicatorOrder());
  }

  void filesKeptWithACaseAreViewableAndSavable() {
    DatabaseSession session;
    QVERIFY(session.open(db_));
    RunsView view(&session);
    view.reload();
    const CaseRecord k8v8 = fixtureCase(KvDtype::k8v8);
    view.selectCases({k8v8.id});
    ProfilerPanel* panel = view.profilerPanel();
    QListWidget* files = panel->artifactList();
    QCOMPARE(files->count(), 2);

    // samples.json: viewed read-only, as stored.
    files->setCurrentRow(0);
    QVERIFY(files->currentItem()->text().startsWith(QStringLiteral("samples.json")));
    QVERIFY(panel->viewButton()->isEnabled());
    QVERIFY(panel->saveButton()->isEnabled());
    QDialog* dialog = panel->viewArtifact(QStringLiteral("samples.json"));
    QVERIFY(dialog);
    auto* text = dialog->findChild<QPlainTextEdit*>();
    QVERIFY(text);
    QVERIFY(text->isReadOnly());
    QVERIFY(text->toPlainText().contains(QStringLiteral("samples_us")));
    dialog->close();

    // A binary report: not shown as text, saved byte for byte.
    files->setCurrentRow(1);
    QVERIFY(!panel->viewButton()->isEnabled());
    QVERIFY(panel->saveButton()->isEnabled());
    QVERIFY(!panel->viewArtifact(QStringLiteral("profile.ncu-rep")));
    const QString out = dir_.filePath(QStringLiteral("saved.ncu-rep"));
    QString error;
    QVERIFY2(panel->saveArtifact(QStringLiteral("profile.ncu-rep"), out, &error), qPrintable(error));
    QFile saved(out);
    QVERIFY(saved.open(QIODevice::ReadOnly));
    QCOMPARE(saved.readAll(), QByteArray("\x4e\x00\xff\x01", 4));
    QVERIFY(!panel->saveArtifact(QStringLiteral("absent.json"), out, &error));
    QVERIFY(error.contains(QStringLiteral("absent.json")));
  }
};

QTEST_MAIN(TestRunsView)
#include "test_runs_view.moc"
