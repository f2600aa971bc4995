// The break-even view follows the operating-point editor: the shape the editor holds is
// the row selected and the waterfall drawn, also after the cases are reloaded. A row whose
// difference is within the repeats' spread is marked; the table fits its width at 1440×900.

#include <QHeaderView>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QStyle>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "fixture_db.h"
#include "ui/main_window.h"
#include "ui/models/break_even_model.h"
#include "ui/views/break_even_view.h"

using namespace tilepath;
using namespace tilepath::ui;

class TestBreakEvenView : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::vector<CaseSummary> cases_;

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
    const std::string db = dir_.filePath(QStringLiteral("fixture.sqlite")).toStdString();
    test::writeFixtureDatabase(db);
    cases_ = RunStore::open_read_only(db).cases();
  }

  void shapeFollowsTheOperatingPoint() {
    BreakEvenView view;
    view.setCases(cases_);
    QCOMPARE(view.model()->rowCount(), 6);  // 3 contexts × 2 cache states at B=8
    // With no point to follow: the largest HBM-cold shape.
    QVERIFY(view.selectedRow().has_value());
    QCOMPARE(view.selectedRow()->op.context, 16384);
    QCOMPARE(view.selectedRow()->op.cache, CacheState::hbm_cold);

    OperatingPoint op = view.model()->rows().front().op;
    op.context = 1024;
    op.cache = CacheState::l2_warm;
    op.kv = KvDtype::k16v16;  // the variant does not matter, the shape does
    view.followOperatingPoint(op);
    QVERIFY(view.selectedRow().has_value());
    QCOMPARE(view.selectedRow()->op.context, 1024);
    QCOMPARE(view.selectedRow()->op.cache, CacheState::l2_warm);

    // A reload keeps the followed shape.
    view.setCases(cases_);
    QCOMPARE(view.selectedRow()->op.context, 1024);
    QCOMPARE(view.selectedRow()->op.cache, CacheState::l2_warm);

    // A shape the table does not hold leaves the selection as it was.
    op.context = 4096;
    op.batch = 3;
    view.followOperatingPoint(op);
    QCOMPARE(view.selectedRow()->op.context, 1024);
  }

  void allRowsVisible() {
    BreakEvenView view;
    view.resize(1200, 800);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setCases(cases_);
    QCoreApplication::processEvents();
    QTableView* table = view.table();
    const int last = table->model()->rowCount() - 1;
    QCOMPARE(last, 5);
    // The last row ends inside the table's viewport, so none is hidden behind a scroll.
    const int bottom = table->rowViewportPosition(last) + table->rowHeight(last);
    QVERIFY2(
        table->rowViewportPosition(0) >= 0 && bottom <= table->viewport()->height(),
        qPrintable(QStringLiteral("last row ends at %1, viewport %2").arg(bottom).arg(table->viewport()->height())));
  }

  void rowsWithinTheRepeatsSpreadAreMarked() {
    // Shape S=1024 cold: wide repeats (±10% each); S=4096 cold: tight (±0.5%); the rest store no min/max.
    std::vector<CaseSummary> cases = cases_;
    for (CaseSummary& c : cases) {
      const OperatingPoint& op = c.record.op;
      if (op.cache != CacheState::hbm_cold || (op.kv != KvDtype::k8v8 && op.kv != KvDtype::k16v8)) continue;
      const double spread = op.context == 1024 ? 0.1 : op.context == 4096 ? 0.005 : NAN;
      if (!std::isfinite(spread)) continue;
      const double latency = *c.record.measurement("latency_us");
      c.record.measurements.push_back({"latency_min_us", latency * (1 - spread), "us"});
      c.record.measurements.push_back({"latency_max_us", latency * (1 + spread), "us"});
    }
    BreakEvenModel model;
    model.setCases(cases);
    int noisy = 0, clear = 0, unknown = 0;
    for (int r = 0; r < model.rowCount(); ++r) {
      const BreakEvenRow& row = model.rowAt(r);
      QVERIFY(row.decomposition.has_value());
      const QModelIndex delta = model.index(r, BreakEvenModel::DeltaUs);
      const QString noise_text = model.index(r, BreakEvenModel::NoiseUs).data().toString();
      if (row.op.cache != CacheState::hbm_cold || row.op.context == 16384) {
        // No spread stored: the noise is unknown, said so, and nothing is marked.
        QVERIFY(!std::isfinite(row.noise_us));
        QCOMPARE(noise_text, QStringLiteral("unknown"));
        QVERIFY(!delta.data(BreakEvenModel::WithinNoiseRole).toBool());
        QVERIFY(!delta.data(Qt::DecorationRole).isValid());
        ++unknown;
        continue;
      }
      const double spread = row.op.context == 1024 ? 0.2 : 0.01;  // (max − min) / latency
      QCOMPARE(row.k8v8_spread, spread);
      QVERIFY(std::abs(row.noise_us - 0.5 * (row.ii_k8v8_us * spread + row.ii_k16v8_us * spread)) < 1e-12);
      QVERIFY2(noise_text.startsWith(QStringLiteral("±")), qPrintable(noise_text));
      const bool within = std::abs(row.decomposition->delta_us) <= row.noise_us;
      QCOMPARE(delta.data(BreakEvenModel::WithinNoiseRole).toBool(), within);
      // The row's warning: an icon and a colour on Δ, and a tooltip that says why.
      QCOMPARE(delta.data(Qt::DecorationRole).isValid(), within);
      QCOMPARE(delta.data(Qt::ForegroundRole).isValid(), within);
      if (within) QVERIFY(delta.data(Qt::ToolTipRole).toString().contains(QStringLiteral("within the noise")));
      (within ? noisy : clear)++;
      // Each component is marked exactly when it is within the noise.
      const BreakEven& d = *row.decomposition;
      const std::pair<int, double> components[] = {{BreakEvenModel::UnhiddenPrepUs, d.unhidden_k8_prep_us},
                                                   {BreakEvenModel::PenaltyUs, d.pipeline_penalty_us},
                                                   {BreakEvenModel::ExtraK16HbmUs, d.extra_k16_hbm_us}};
      for (const auto& [column, value] : components)
        QCOMPARE(model.index(r, column).data(BreakEvenModel::WithinNoiseRole).toBool(),
                 std::abs(value) <= row.noise_us);
    }
    // Δ is −0.05 µs/tile at every shape: within ±0.165 at S=1024, clear of ±0.008 at S=4096.
    QCOMPARE(noisy, 1);
    QCOMPARE(clear, 1);
    QCOMPARE(unknown, 4);
  }

  void sortIndicatorSaysTheInitialOrder() {
    BreakEvenView view;
    view.setCases(cases_);
    QHeaderView* header = view.table()->horizontalHeader();
    const auto* proxy = qobject_cast<const QSortFilterProxyModel*>(view.table()->model());
    QVERIFY(proxy);
    QCOMPARE(proxy->sortColumn(), header->sortIndicatorSection());
    QCOMPARE(proxy->sortOrder(), header->sortIndicatorOrder());
    QCOMPARE(header->sortIndicatorSection(), int(BreakEvenModel::Shape));
    for (int r = 1; r < proxy->rowCount(); ++r)
      QVERIFY(proxy->index(r - 1, BreakEvenModel::Shape).data(BreakEvenModel::SortRole).toDouble() <=
              proxy->index(r, BreakEvenModel::Shape).data(BreakEvenModel::SortRole).toDouble());
  }

  void tableFitsItsWidthAt1440x900() {
    // The bundled H200 sweep: its shapes and variant names are the long ones.
    MainWindow::Options options;
    options.restoreSettings = false;
    options.interactiveErrors = false;
    MainWindow window(options);
    QVERIFY2(window.openDatabase(QStringLiteral(TILEPATH_SOURCE_DIR "/data/h200-sweep.sqlite")),
             qPrintable(window.lastError()));
    window.resize(1440, 900);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* tabs = window.findChild<QTabWidget*>();
    QVERIFY(tabs);
    for (int i = 0; i < tabs->count(); ++i)
      if (tabs->tabText(i) == QStringLiteral("Break-even")) tabs->setCurrentIndex(i);
    QCoreApplication::processEvents();
    auto* view = window.findChild<BreakEvenView*>();
    QVERIFY(view);
    QTableView* table = view->table();
    QVERIFY(table->model()->rowCount() > 10);
    QTest::qWait(100);  // the header lays out its stretched section on a timer
    QVERIFY2(table->horizontalHeader()->length() <= table->viewport()->width(),
             qPrintable(QStringLiteral("the columns need %1 px of a %2 px viewport")
                            .arg(table->horizontalHeader()->length())
                            .arg(table->viewport()->width())));
    // Every header line is whole beside the sort arrow (CompactSortHeader reserves the arrow's
    // width, not Qt's section height).
    QHeaderView* header = table->horizontalHeader();
    const int arrow = header->style()->pixelMetric(QStyle::PM_HeaderMarkSize, nullptr, header);
    for (int c = 0; c < BreakEvenModel::ColumnCount; ++c) {
      if (c == BreakEvenModel::K8V8Variant) continue;  // stretched: takes what is left, elided
      for (const QString& line : table->model()->headerData(c, Qt::Horizontal).toString().split(QLatin1Char('\n')))
        QVERIFY2(header->fontMetrics().horizontalAdvance(line) + arrow <= table->columnWidth(c),
                 qPrintable(QStringLiteral("column %1: '%2' needs %3 px of %4")
                                .arg(c)
                                .arg(line)
                                .arg(header->fontMetrics().horizontalAdvance(line) + arrow)
                                .arg(table->columnWidth(c))));
    }
    // Every number column shows its numbers whole: as wide as resizing it to its contents makes it.
    for (int c = BreakEvenModel::TK16V16; c < BreakEvenModel::ColumnCount; ++c) {
      const int shown = table->columnWidth(c);
      table->resizeColumnToContents(c);
      const int needed = table->columnWidth(c);
      table->setColumnWidth(c, shown);
      QVERIFY2(shown >= needed, qPrintable(QStringLiteral("column %1: %2 px of %3").arg(c).arg(shown).arg(needed)));
    }
  }
};

QTEST_MAIN(TestBreakEvenView)
#include "test_break_even_view.moc"
