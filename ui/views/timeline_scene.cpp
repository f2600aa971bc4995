#include "ui/views/timeline_scene.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <QBrush>
#include <QFont>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QPen>

#include "ui/qt_text.h"
#include "ui/views/agent_palette.h"

namespace tilepath::ui {

namespace {
constexpr double kLaneGap = 12, kLabelW = 150, kTop = 60, kRightMargin = 16;
constexpr double kMinLaneH = 40, kMaxLaneH = 150;

// A "nice" tick step (1, 2, 5 × 10^k) giving about `target` ticks over span.
double tickStep(double span, int target) {
  double raw = span / std::max(1, target);
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}
}  // namespace

void buildTimelineScene(QGraphicsScene& scene, const VariantAnalysis& a, QSizeF area) {
  scene.clear();
  QFont bold;
  bold.setBold(true);
  bold.setPointSize(11);
  QFont small;
  small.setPointSize(9);

  const PipelineSchedule& sched = a.schedule;
  auto* title = scene.addSimpleText(QStringLiteral("%1   pipeline over %2 tiles   B=%3 S=%4 %5")
                                        .arg(qs(a.op.variant_label()))
                                        .arg(sched.n_tiles)
                                        .arg(a.op.batch)
                                        .arg(a.op.context)
                                        .arg(qs(to_string(a.op.cache))),
                                    bold);
  title->setPos(0, 0);
  if (sched.stages.empty() || sched.makespan_us <= 0) {
    auto* t =
        scene.addSimpleText(QStringLiteral("No stage costs for this variant (no matching case and no GPU model): %1")
                                .arg(qs(a.prediction_note)),
                            small);
    t->setPos(0, 30);
    return;
  }

  // Lanes: every agent that runs something, in the palette order.
  std::set<Agent> used;
  for (const ScheduledStage& s : sched.stages) used.insert(s.agent);
  std::vector<Agent> lanes;
  for (Agent agent : kAllAgents)
    if (used.count(agent)) lanes.push_back(agent);
  const double width_px = std::max(300.0, area.width() - kLabelW - kRightMargin);
  // Below the lanes: the time axis and the summary (46), the unknown-stage note, the legend row.
  const double below_lanes = 46 + (a.unknownStages().empty() ? 0 : 18) + 24 + 18;
  const double lane_h =
      std::clamp((area.height() - kTop - below_lanes) / double(lanes.size()) - kLaneGap, kMinLaneH, kMaxLaneH);
  auto laneY = [&](Agent agent) {
    for (size_t i = 0; i < lanes.size(); ++i)
      if (lanes[i] == agent) return kTop + i * (lane_h + kLaneGap);
    return kTop;
  };
  const double t0 = sched.stages.front().start_us;
  double t_end = t0;
  for (const ScheduledStage& s : sched.stages) t_end = std::max(t_end, s.end_us);
  const double span = std::max(1e-9, t_end - t0);
  const double scale = width_px / span;
  auto xOf = [&](double t) { return kLabelW + (t - t0) * scale; };
  const double lanes_bottom = kTop + lanes.size() * (lane_h + kLaneGap);

  for (Agent agent : lanes) {
    double y = laneY(agent);
    scene.addRect(QRectF(kLabelW, y, width_px, lane_h), QPen(Qt::NoPen), QBrush(QColor(245, 245, 245)));
    auto* label = scene.addSimpleText(agentTitle(agent), small);
    label->setBrush(agentColour(agent).darker(140));
    label->setPos(0, y + lane_h / 2 - 8);
    scene.addRect(QRectF(kLabelW - 12, y + 8, 6, lane_h - 16), QPen(Qt::NoPen), QBrush(agentColour(agent)));
  }

  // Time axis.
  const double step = tickStep(span, 10);
  for (double t = 0; t <= span + 1e-9; t += step) {
    double x = xOf(t0 + t);
    scene.addLine(x, lanes_bottom, x, lanes_bottom + 5, QPen(Qt::black));
    auto* tick = scene.addSimpleText(QString::number(t, 'g', 4), small);
    tick->setPos(x - tick->boundingRect().width() / 2, lanes_bottom + 6);
  }
  auto* unit = scene.addSimpleText(QStringLiteral("time (µs)"), small);
  unit->setPos(kLabelW + width_px - unit->boundingRect().width(), lanes_bottom + 22);

  // Blocks.
  for (const ScheduledStage& s : sched.stages) {
    double x0 = xOf(s.start_us), x1 = xOf(s.end_us);
    double w = std::max(1.5, x1 - x0);
    double y = laneY(s.agent) + 4;
    auto* block =
        scene.addRect(QRectF(x0, y, w, lane_h - 8),
                      QPen(s.critical ? QColor(20, 20, 20) : stageColour(s.stage).darker(150), s.critical ? 2 : 1),
                      QBrush(stageColour(s.stage)));
    block->setData(kTimelineStageKey, qs(to_string(s.stage)));
    block->setData(kTimelineTileKey, s.tile);
    block->setZValue(2);
    block->setToolTip(QStringLiteral("%1, tile %2\nstart %3 µs\nend %4 µs\nduration %5 µs%6")
                          .arg(qs(to_string(s.stage)))
                          .arg(s.tile)
                          .arg(QString::number(s.start_us, 'g', 5), QString::number(s.end_us, 'g', 5),
                               QString::number(s.end_us - s.start_us, 'g', 4),
                               s.critical ? QStringLiteral("\non the critical path") : QString()));
    if (w > 26) {
      auto* t = new QGraphicsSimpleTextItem(
          s.tile >= 0 && s.tile < sched.n_tiles ? QString::number(s.tile) : QStringLiteral("·"), block);
      t->setFont(small);
      t->setPos(x0 + 3, y + 3);
    }
  }

  // II marks: from the completion of tile 0's last stage, one line per II.
  double first_done = -1;
  for (const ScheduledStage& s : sched.stages)
    if (s.tile == 0) first_done = std::max(first_done, s.end_us);
  if (first_done < 0) first_done = t0;
  // The II labels share one row above the lanes, each after the previous one, so the two
  // never overlap however close the predicted and measured IIs are.
  double label_x = xOf(first_done) + 4;
  auto drawIIs = [&](double ii, const QPen& pen, double label_y, const QString& what) {
    if (!std::isfinite(ii) || ii <= 0) return;
    int count = 0;
    for (double t = first_done; t <= t_end + 1e-9 && count < 64; t += ii, ++count) {
      auto* line = scene.addLine(xOf(t), kTop - 8, xOf(t), lanes_bottom, pen);
      line->setZValue(3);
    }
    auto* label = scene.addSimpleText(QStringLiteral("%1 %2 µs").arg(what, QString::number(ii, 'g', 4)), small);
    label->setBrush(pen.color());
    label->setData(kTimelineIILabelKey, what);
    label->setPos(label_x, label_y);
    label_x += label->boundingRect().width() + 16;
  };
  const double predicted_ii = sched.steady_ii_us > 0 ? sched.steady_ii_us : a.ii.ii_us;
  drawIIs(predicted_ii, QPen(QColor(30, 30, 200), 1.5), kTop - 30, QStringLiteral("predicted II"));
  drawIIs(a.measured_ii_us, QPen(QColor(200, 30, 30), 1.5, Qt::DashLine), kTop - 30, QStringLiteral("measured II"));

  // What no stage explains: the measured interval past the prediction (the kernel II model
  // of isolated costs where there is one), drawn after the first predicted II.
  const double explained_ii = a.kernel_ii ? a.kernel_ii->ii_us : predicted_ii;
  const double unexplained = a.measured_ii_us - explained_ii;
  if (std::isfinite(unexplained) && unexplained > 0 && explained_ii > 0) {
    const double x0 = xOf(first_done + explained_ii), x1 = xOf(first_done + a.measured_ii_us);
    auto* bar = scene.addRect(QRectF(x0, kTop - 8, std::max(1.5, x1 - x0), lanes_bottom - kTop + 8),
                              QPen(QColor(200, 30, 30), 1), QBrush(QColor(200, 30, 30, 60), Qt::BDiagPattern));
    bar->setData(kTimelineUnexplainedKey, unexplained);
    bar->setZValue(1);
    bar->setToolTip(QStringLiteral("unexplained: %1 µs of the measured %2 µs interval that the %3 (%4 µs) does not "
                                   "account for")
                        .arg(QString::number(unexplained, 'g', 4), QString::number(a.measured_ii_us, 'g', 4),
                             !a.kernel_ii ? QStringLiteral("predicted II")
                             : a.kernel_ii->missing.empty()
                                 ? QStringLiteral("kernel II model of the isolated costs")
                                 : QStringLiteral("kernel II model (a lower bound: stages without an "
                                                  "isolated cost count as 0)"),
                             QString::number(explained_ii, 'g', 4)));
  }

  // Summary and stage legend.
  double y = lanes_bottom + 46;
  auto* summary = scene.addSimpleText(
      QStringLiteral(
          "makespan %1 µs, serial sum %2 µs, overlap %3%, steady II %4 µs (model %5 µs, limiting %6), costs %7")
          .arg(QString::number(sched.makespan_us, 'g', 4), QString::number(sched.serial_sum_us, 'g', 4),
               QString::number(100 * sched.overlap_fraction, 'f', 0), QString::number(sched.steady_ii_us, 'g', 4),
               QString::number(a.ii.ii_us, 'g', 4), qs(to_string(a.ii.limiting_stage)),
               a.ii_from_measured
                   ? (a.measured_from_model ? QStringLiteral("from the sim backend") : QStringLiteral("measured"))
                   : QStringLiteral("predicted")),
      small);
  summary->setPos(kLabelW, y);
  if (const std::vector<Stage> unknown = a.unknownStages(); !unknown.empty()) {
    QStringList names;
    for (Stage s : unknown) names << qs(to_string(s));
    y += 18;
    auto* note = scene.addSimpleText(
        QStringLiteral("unknown stages (no measurement; drawn and counted as 0): %1").arg(names.join(", ")), small);
    note->setBrush(QColor(0xb4, 0x1e, 0x1e));
    note->setPos(kLabelW, y);
  }
  y += 24;
  double x = kLabelW;
  for (Stage s : a.graph.stages()) {
    scene.addRect(QRectF(x, y, 14, 14), QPen(stageColour(s).darker(150)), QBrush(stageColour(s)));
    auto* t = scene.addSimpleText(qs(to_string(s)), small);
    t->setPos(x + 18, y - 1);
    x += 34 + t->boundingRect().width();
  }
}

double timelineUnexplainedUs(const QGraphicsScene& scene) {
  for (QGraphicsItem* item : scene.items())
    if (item->data(kTimelineUnexplainedKey).isValid()) return item->data(kTimelineUnexplainedKey).toDouble();
  return 0;
}

int timelineBlockCount(const QGraphicsScene& scene) {
  int n = 0;
  for (QGraphicsItem* item : scene.items())
    if (item->data(kTimelineStageKey).isValid()) ++n;
  return n;
}

}  // namespace tilepath::ui
