#pragma once
// Which database the GUI opens first, and the small demo sweeps that fill a
// fresh database so a new user sees results at once.

#include <vector>

#include <QString>

#include "core/sweep.h"

namespace tilepath::ui {

// The bundled H200 sweep: <exe>/../share/tilepath/data/h200-sweep.sqlite, then the
// source tree's data/. "" when neither exists.
QString bundledDatabasePath();

// The user's own copy of the bundled database, <AppDataLocation>/h200-sweep.sqlite:
// made on first use so that opening it (WAL mode) and running cases into it never
// touch the shipped file; an existing copy is kept as it is (it may hold the
// user's runs). "" when there is no bundled database or the copy failed (*error says why).
QString workingCopyOfBundledDatabase(QString* error = nullptr);

// <AppDataLocation>/demo.sqlite (the folder is created).
QString demoDatabasePath();

// A sim sweep (every valid dtype/path/mode over a batch x context grid, warm
// and cold) and a small cpu sweep (tiny shapes, every dtype control), so the
// charts, the break-even view and the timeline all have data.
SweepSpec demoSimSweep();
SweepSpec demoCpuSweep();

}  // namespace tilepath::ui
