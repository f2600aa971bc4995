#pragma once
// Draws the simulated pipeline schedule as a Gantt chart: one lane per agent,
// blocks coloured by stage with tile numbers (tooltip: stage, tile, start, end),
// the predicted II as solid vertical lines and the measured II as dashed ones.

#include "ui/variant_analysis.h"

class QGraphicsScene;

namespace tilepath::ui {

inline constexpr int kTimelineStageKey = 0;  // block item data: stage name
inline constexpr int kTimelineTileKey = 1;   // block item data: tile index

void buildTimelineScene(QGraphicsScene& scene, const VariantAnalysis& analysis, double width_px = 1500);
// Number of stage blocks drawn (for tests).
int timelineBlockCount(const QGraphicsScene& scene);

}  // namespace tilepath::ui
