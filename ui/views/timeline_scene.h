#pragma once
// Draws the simulated pipeline schedule as a Gantt chart: one lane per agent,
// blocks coloured by stage with tile numbers (tooltip: stage, tile, start, end),
// the predicted II as solid vertical lines and the measured II as dashed ones; where the
// measured interval is longer than the prediction, the remainder as its own bar.

#include <QSizeF>

#include "ui/variant_analysis.h"

class QGraphicsScene;

namespace tilepath::ui {

inline constexpr int kTimelineStageKey = 0;  // block item data: stage name
inline constexpr int kTimelineTileKey = 1;   // block item data: tile index
// The measured interval's remainder that no stage explains (measured II - the kernel II
// model's, or the schedule's steady II): one hatched bar after the first II, marked true.
inline constexpr int kTimelineUnexplainedKey = 2;
// The "predicted II …" / "measured II …" labels carry which II they name under this key.
inline constexpr int kTimelineIILabelKey = 3;

// Fills about `area` (the view's visible size): the time axis spans its width after the lane
// labels, the lanes share its height (within a readable minimum and maximum lane height).
void buildTimelineScene(QGraphicsScene& scene, const VariantAnalysis& analysis, QSizeF area = QSizeF(1650, 560));
// Number of stage blocks drawn (for tests).
int timelineBlockCount(const QGraphicsScene& scene);
// Width in µs of the unexplained-remainder bar; 0 when none is drawn.
double timelineUnexplainedUs(const QGraphicsScene& scene);

}  // namespace tilepath::ui
