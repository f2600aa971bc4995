// The views draw where the time goes: the stage graph gives each stage with an isolated
// cost a bar (its length the isolated cost, its dark part the unhidden part) and names
// the tile size; the timeline draws the measured interval's unexplained remainder.

#include <QGraphicsPathItem>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QGraphicsView>
#include <QListWidget>
#include <QTableWidget>
#include <QtTest>
#include <map>

#include "core/analysis/variant_analysis.h"
#include "ui/views/profiler_panel.h"
#include "ui/views/stage_graph_scene.h"
#include "ui/views/timeline_scene.h"
#include "ui/views/timeline_view.h"

using namespace tilepath;
using namespace tilepath::ui;

namespace {

// A cuda K8/V8 k_only case at B=64, S=4096 with isolated costs of every per-tile stage,
// removed costs of two, and a measured interval 0.4 us longer than the kernel II model's.
CaseSummary cuda_case() {
  CaseSummary c;
  c.backend = "cuda";
  c.device = "NVIDIA H200";
  CaseRecord& r = c.record;
  r.op.batch = 64;
  r.op.context = 4096;
  r.op.kv = KvDtype::k8v8;
  r.op.k_path = KPath::transform;
  r.op.mode = TransformMode::k_only;
  r.kernel.splits = 1;
  r.measurements = {{"tile_tokens", 64, ""}, {"read_bandwidth_gbps", 4550, "GB/s"}, {"tile_interval_us", 2.3, "us"}};
  const std::pair<Stage, double> isolated[] = {{Stage::k_load, 0.95}, {Stage::v_load, 0.95}, {Stage::k_prep, 0.3},
                                               {Stage::qk, 0.2},      {Stage::softmax, 0.4}, {Stage::pv, 0.3},
                                               {Stage::accum, 0.1}};
  for (auto [s, us] : isolated) r.stage_costs.push_back({s, CostMethod::isolated, us});
  r.stage_costs.push_back({Stage::softmax, CostMethod::removed, 0.1});
  r.stage_costs.push_back({Stage::k_prep, CostMethod::removed, 0.3});
  return c;
}

// The stage graph's II line (the caption that gives the measured and the kernel II).
QString iiCaption(const QGraphicsScene& scene) {
  QString line;
  for (QGraphicsItem* item : scene.items())
    if (item->data(kIICaptionKey).isValid()) line = static_cast<QGraphicsSimpleTextItem*>(item)->text();
  return line;
}

QGraphicsRectItem* barOf(const QGraphicsScene& scene, const QString& stage) {
  for (QGraphicsItem* item : scene.items())
    if (item->data(kStageBarKey).toString() == stage) return static_cast<QGraphicsRectItem*>(item);
  return nullptr;
}

}  // namespace

class TestStageTruthViews : public QObject {
  Q_OBJECT
 private slots:
  void stageGraphDrawsIsolatedBarsAndTheTileSize() {
    const CaseSummary c = cuda_case();
    const analysis::VariantAnalysis a = analysis::analyze_variant(c.record.op, c);
    QGraphicsScene scene;
    buildStageGraphScene(scene, a);
    QCOMPARE(isolatedBarNames(scene), (QStringList{"accum", "k_load", "k_prep", "pv", "qk", "softmax", "v_load"}));
    // One scale for the graph: the loads (0.95 us) are the longest bars, qk's is 0.2/0.95 of them.
    QGraphicsRectItem* load = barOf(scene, "k_load");
    QGraphicsRectItem* qk = barOf(scene, "qk");
    QVERIFY(load && qk);
    QVERIFY(qFuzzyCompare(qk->rect().width() / load->rect().width(), 0.2 / 0.95));
    QVERIFY(barOf(scene, "softmax")->toolTip().isEmpty());  // the node carries the tooltip
    bool caption = false;
    for (QGraphicsItem* item : scene.items())
      if (item->data(kTileCaptionKey).isValid())
        caption = static_cast<QGraphicsSimpleTextItem*>(item)->text().contains(QStringLiteral("64 tokens"));
    QVERIFY2(caption, "the tile size in tokens is shown");
  }

  void stageGraphShowsTheKernelModelsIIBesideTheMeasuredOne() {
    const CaseSummary c = cuda_case();
    const analysis::VariantAnalysis a = analysis::analyze_variant(c.record.op, c);
    QGraphicsScene scene;
    buildStageGraphScene(scene, a);
    const QString line = iiCaption(scene);
    QVERIFY2(line.contains(QStringLiteral("measured II 2.3 µs")), qPrintable(line));
    // memory (k_load + v_load, 1.9) above the mma warps (1.3): the larger load, the first on a tie
    QVERIFY2(line.contains(QStringLiteral("kernel II model 1.9 µs (64 tokens/tile), limited by k_load")),
             qPrintable(line));
    QVERIFY(line.indexOf(QStringLiteral("measured II")) < line.indexOf(QStringLiteral("kernel II model")));
    QCOMPARE(limitingNodeNames(scene), QStringList{QStringLiteral("k_load")});  // the border: the kernel's limit
  }

  void stageGraphMarksAKernelIIOfTheRingAloneAsALowerBound() {
    // A wgmma case: its ring measured whole (load_only), no stage measured apart.
    CaseSummary c = cuda_case();
    c.record.op.mma = Mma::wgmma;
    c.record.stage_costs.clear();
    c.record.measurements.push_back({"tile_interval_load_only_us", 1.9, "us"});
    const analysis::VariantAnalysis a = analysis::analyze_variant(c.record.op, c);
    QVERIFY(a.kernel_ii.has_value());
    QVERIFY(!a.kernel_ii->missing.empty());
    QGraphicsScene scene;
    buildStageGraphScene(scene, a);
    const QString line = iiCaption(scene);
    QVERIFY2(line.contains(QStringLiteral("kernel II model >= 1.9 µs (64 tokens/tile), limited by the ring")),
             qPrintable(line));
    QVERIFY2(line.contains(QStringLiteral("measured II 2.3 µs")), qPrintable(line));
    // The ring limits: both of its loads get the thick border.
    QCOMPARE(limitingNodeNames(scene), (QStringList{QStringLiteral("k_load"), QStringLiteral("v_load")}));
  }

  void stageGraphNamesTheComputeMeasuredWholeWhereItLimits() {
    // A wgmma case with its compute measured whole (compute_only) above its ring: the caption
    // names the compute, whatever the design note's agents above make of the stages apart.
    CaseSummary c = cuda_case();
    c.record.op.mma = Mma::wgmma;
    c.record.stage_costs.clear();
    c.record.stage_costs.push_back({Stage::softmax, CostMethod::isolated, 0.9});
    c.record.stage_costs.push_back({Stage::k_load, CostMethod::isolated, 1.0});
    c.record.measurements.push_back({"tile_interval_load_only_us", 1.9, "us"});
    c.record.measurements.push_back({"tile_interval_compute_only_us", 2.1, "us"});
    const analysis::VariantAnalysis a = analysis::analyze_variant(c.record.op, c);
    QVERIFY(a.kernel_ii.has_value());
    QCOMPARE(a.ii.limiting_stage, Stage::k_load);  // the design note's agents: k_load alone above softmax
    QGraphicsScene scene;
    buildStageGraphScene(scene, a);
    const QString line = iiCaption(scene);
    QVERIFY2(line.contains(QStringLiteral("kernel II model 2.1 µs (64 tokens/tile), limited by the compute")),
             qPrintable(line));
    // The border goes to the compute's largest stage measured apart, not to the design note's
    // limiting stage.
    QCOMPARE(limitingNodeNames(scene), QStringList{QStringLiteral("softmax")});
  }

  void stageGraphShowsAZeroRemovalCostAsHidden() {
    CaseSummary c = cuda_case();
    // Without its isolated cost, qk's measured cost is the removal difference (0).
    std::erase_if(c.record.stage_costs, [](const StageCostRow& row) { return row.stage == Stage::qk; });
    c.record.stage_costs.push_back({Stage::qk, CostMethod::removed, 0.0});
    const analysis::VariantAnalysis a = analysis::analyze_variant(c.record.op, c);
    QVERIFY(a.measured.known(Stage::qk));
    QCOMPARE(a.measured[Stage::qk], 0.0);
    QGraphicsScene scene;
    buildStageGraphScene(scene, a);
    bool found = false;
    for (QGraphicsItem* item : scene.items()) {
      if (item->data(kStageNodeKey).toString() != QStringLiteral("qk")) continue;
      for (QGraphicsItem* child : item->childItems())
        if (auto* text = dynamic_cast<QGraphicsSimpleTextItem*>(child);
            text && text->text().startsWith(QStringLiteral("meas")))
          found = text->text() == QStringLiteral("meas hidden (≤ 0)");
    }
    QVERIFY2(found, "qk's zero removal cost reads \"meas hidden (≤ 0)\"");
  }

  void timelineDrawsTheUnexplainedRemainder() {
    CaseSummary c = cuda_case();
    analysis::VariantAnalysis a = analysis::analyze_variant(c.record.op, c);
    QVERIFY(a.kernel_ii.has_value());
    QVERIFY(qFuzzyCompare(a.kernel_ii->ii_us, 1.9));  // memory: 0.95 + 0.95 > mma warps 1.3
    QGraphicsScene scene;
    buildTimelineScene(scene, a);
    QVERIFY(qFuzzyCompare(timelineUnexplainedUs(scene), 2.3 - 1.9));
    // A measured interval at or below the model: nothing unexplained to draw.
    c.record.measurements[2].value = 1.8;
    a = analysis::analyze_variant(c.record.op, c);
    buildTimelineScene(scene, a);
    QCOMPARE(timelineUnexplainedUs(scene), 0.0);
  }

  void qQuantEdgeIsRoutedClearOfTheKChain() {
    OperatingPoint op;
    op.kv = KvDtype::k8v8;
    op.k_path = KPath::fp8_qk;
    op.mode = default_mode(op.kv, op.k_path);
    const analysis::VariantAnalysis a = analysis::analyze_variant(op, std::nullopt);
    QGraphicsScene scene;
    buildStageGraphScene(scene, a);
    std::map<QString, QRectF> nodes;
    QGraphicsPathItem* edge = nullptr;
    for (QGraphicsItem* item : scene.items()) {
      if (item->data(kStageNodeKey).isValid()) nodes[item->data(kStageNodeKey).toString()] = item->sceneBoundingRect();
      if (item->data(kEdgeKey).toString() == QStringLiteral("q_quant→qk")) edge = static_cast<QGraphicsPathItem*>(item);
    }
    QVERIFY(nodes.count(QStringLiteral("q_quant")) && nodes.count(QStringLiteral("k_load")));
    QVERIFY(edge);
    // Sampled along its length, the edge enters no node but its two ends'.
    const QPainterPath path = edge->path();
    for (int i = 0; i <= 200; ++i) {
      const QPointF p = path.pointAtPercent(i / 200.0);
      for (const auto& [name, rect] : nodes) {
        if (name == QStringLiteral("q_quant") || name == QStringLiteral("qk")) continue;
        QVERIFY2(!rect.adjusted(1, 1, -1, -1).contains(p),
                 qPrintable(QStringLiteral("q_quant→qk crosses %1 at (%2, %3)").arg(name).arg(p.x()).arg(p.y())));
      }
    }
  }

  void timelineIILabelsDoNotOverlap() {
    // Predicted 1.9 us and measured 2.3 us start from the same tile-0 completion: labels
    // drawn at the same x overlapped.
    const CaseSummary c = cuda_case();
    const analysis::VariantAnalysis a = analysis::analyze_variant(c.record.op, c);
    QGraphicsScene scene;
    buildTimelineScene(scene, a);
    QList<QRectF> labels;
    for (QGraphicsItem* item : scene.items())
      if (item->data(kTimelineIILabelKey).isValid()) labels << item->sceneBoundingRect();
    QCOMPARE(labels.size(), 2);
    QVERIFY2(!labels[0].intersects(labels[1]), "the predicted and measured II labels overlap");
  }

  void timelineFillsItsCanvas() {
    // The lanes stood at a fixed height: on a tall window half the canvas stayed blank.
    const CaseSummary c = cuda_case();
    for (const QSize size : {QSize(1200, 900), QSize(1600, 600)}) {
      TimelineView view;
      view.resize(size);
      view.show();
      QVERIFY(QTest::qWaitForWindowExposed(&view));
      view.setAnalysis(analysis::analyze_variant(c.record.op, c));
      auto* graphics = view.findChild<QGraphicsView*>();
      QVERIFY(graphics);
      const QSize viewport = graphics->viewport()->size();
      const QRectF drawn = view.scene()->itemsBoundingRect();
      QVERIFY2(drawn.width() >= 0.9 * viewport.width() && drawn.height() >= 0.85 * viewport.height(),
               qPrintable(QStringLiteral("drawing %1×%2 in a %3×%4 viewport")
                              .arg(drawn.width())
                              .arg(drawn.height())
                              .arg(viewport.width())
                              .arg(viewport.height())));
      // Not by scaling: text is drawn at its own size, and nothing needs a scroll bar.
      QVERIFY(graphics->transform().isIdentity());
      QVERIFY(drawn.width() <= viewport.width() && drawn.height() <= viewport.height());
    }
  }

  void profilerPanelListsNcuMetricsStallsFirstByCostAndOpensTheRawReport() {
    CaseRecord rec = cuda_case().record;
    rec.id = 7;
    rec.measurements.push_back({"ncu_stall_barrier_cycles", 0.35, "cycle"});
    rec.measurements.push_back({"ncu_stall_long_scoreboard_cycles", 1.8, "cycle"});
    rec.measurements.push_back({"ncu_dram_bytes_read", 537395200, "byte"});
    const std::string csv = "\"ID\",\"Kernel Name\"\n";
    rec.artifacts.push_back({"ncu-profile.csv", "text/csv", std::vector<std::uint8_t>(csv.begin(), csv.end())});
    rec.artifacts.push_back({"blob.bin", "application/octet-stream", {1, 0, 2}});
    ProfilerPanel panel;
    panel.setCase(rec);
    QTableWidget* t = panel.metricsTable();
    QCOMPARE(t->rowCount(), 3);  // only the ncu_* measurements
    QCOMPARE(t->item(0, 0)->text(), QStringLiteral("ncu_dram_bytes_read"));
    QCOMPARE(t->item(1, 0)->text(), QStringLiteral("ncu_stall_long_scoreboard_cycles"));  // the larger stall first
    QCOMPARE(t->item(2, 0)->text(), QStringLiteral("ncu_stall_barrier_cycles"));
    QCOMPARE(panel.artifactList()->count(), 2);
    QCOMPARE(panel.artifactText(QStringLiteral("ncu-profile.csv")), QString::fromStdString(csv));
    QVERIFY(panel.artifactText(QStringLiteral("blob.bin")).contains(QStringLiteral("binary")));
    panel.setCase(CaseRecord{});
    QCOMPARE(t->rowCount(), 0);
  }
};

QTEST_MAIN(TestStageTruthViews)
#include "test_stage_truth_views.moc"
