// tilepath-gui: the Qt desktop explorer. All logic lives in core/ and ui/.
//   tilepath-gui [--open DB] [--view NAME] [--screenshot FILE.png [--size WxH]]
//   tilepath-gui --open DB --timing   (bench/large_db.py: time to the first window and to each view)
//   tilepath-gui --open DB --tour DIR  (tests/gui/smoke_xvfb.py: every tab grabbed from the screen)

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QElapsedTimer>
#include <QPixmap>
#include <QScreen>
#include <QTimer>
#include <QWindow>

#include "ui/database_session.h"
#include "ui/main_window.h"
#include "ui/widget_export.h"

namespace {

// Peak resident set of this process (VmHWM), in MB; -1 when /proc does not say.
double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return -1;
}

// --timing: the window shown and painted, then every view in turn shown, filled and
// rendered, each time printed in ms since main() began ("timing <key> <value>").
int print_timing(tilepath::ui::MainWindow& window, const QElapsedTimer& clock) {
  window.show();
  QApplication::processEvents();
  (void)window.grab();
  std::printf("timing first_window_ms %.1f\n", double(clock.nsecsElapsed()) / 1e6);
  std::fflush(stdout);
  window.session()->waitForLoad();
  std::printf("timing cases_read_ms %.1f\n", double(clock.nsecsElapsed()) / 1e6);
  std::printf("timing cases_read_rss_mb %.1f\n", peak_rss_mb());
  for (const QString& name : tilepath::ui::MainWindow::viewNames()) {
    window.showView(name);
    QApplication::processEvents();
    (void)window.grab();
    std::printf("timing view_%s_ms %.1f\n", qPrintable(name), double(clock.nsecsElapsed()) / 1e6);
    std::printf("timing view_%s_rss_mb %.1f\n", qPrintable(name), peak_rss_mb());
  }
  std::printf("timing every_view_ms %.1f\n", double(clock.nsecsElapsed()) / 1e6);
  std::printf("timing peak_rss_mb %.1f\n", peak_rss_mb());
  return 0;
}

// --tour: the real window shown, each view made current in turn and grabbed from the
// screen (the window system's pixels, not a render of the widget tree) into DIR/<view>.png.
int tour_views(tilepath::ui::MainWindow& window, const QString& dir) {
  if (!QDir().mkpath(dir)) {
    std::fprintf(stderr, "tilepath-gui: --tour: cannot create %s\n", qPrintable(dir));
    return 1;
  }
  window.show();
  window.session()->waitForLoad();
  for (const QString& name : tilepath::ui::MainWindow::viewNames()) {
    window.showView(name);
    // Long enough for the window system to map, expose and repaint the new tab.
    QElapsedTimer settle;
    settle.start();
    while (settle.elapsed() < 300) QApplication::processEvents(QEventLoop::AllEvents, 50);
    QScreen* screen = window.windowHandle() != nullptr ? window.windowHandle()->screen() : nullptr;
    if (screen == nullptr) {
      std::fprintf(stderr, "tilepath-gui: --tour: the window has no screen\n");
      return 1;
    }
    const QString path = QDir(dir).filePath(name + QStringLiteral(".png"));
    const QPixmap shot = screen->grabWindow(window.winId());
    if (shot.isNull() || !shot.save(path, "PNG")) {
      std::fprintf(stderr, "tilepath-gui: --tour: cannot grab or write %s\n", qPrintable(path));
      return 1;
    }
    std::printf("tour %s %s %dx%d\n", qPrintable(name), qPrintable(path), shot.width(), shot.height());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  QElapsedTimer clock;
  clock.start();
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("tilepath"));
  QApplication::setApplicationName(QStringLiteral("tilepath-gui"));
  QApplication::setApplicationVersion(QStringLiteral("0.1.0"));

  QCommandLineParser parser;
  parser.setApplicationDescription(
      QStringLiteral("Explore FP8 KV-cache decode attention: tile paths, stage costs, overlap."));
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption open({QStringLiteral("o"), QStringLiteral("open")}, QStringLiteral("Open this run database."),
                          QStringLiteral("DB"));
  QCommandLineOption view(
      QStringLiteral("view"),
      QStringLiteral("Start on this view: %1.").arg(tilepath::ui::MainWindow::viewNames().join(QLatin1Char('|'))),
      QStringLiteral("NAME"));
  QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                QStringLiteral("Render the view to FILE.png (or .svg) and exit."),
                                QStringLiteral("FILE"));
  QCommandLineOption size(QStringLiteral("size"), QStringLiteral("Window size for --screenshot (default 1440x900)."),
                          QStringLiteral("WxH"), QStringLiteral("1440x900"));
  QCommandLineOption timing(QStringLiteral("timing"),
                            QStringLiteral("Print the time to the first window and to each view, then exit."));
  QCommandLineOption tour(QStringLiteral("tour"),
                          QStringLiteral("Show the window, grab every view from the screen into DIR/<view>.png, exit."),
                          QStringLiteral("DIR"));
  parser.addOptions({open, view, screenshot, size, timing, tour});
  parser.process(app);

  const bool shot = parser.isSet(screenshot) || parser.isSet(tour);
  tilepath::ui::MainWindow::Options options;
  options.restoreSettings = !shot;
  options.interactiveErrors = !shot;
  options.loadInBackground = true;
  tilepath::ui::MainWindow window(options);

  if (parser.isSet(view) && !window.showView(parser.value(view))) {
    std::fprintf(stderr, "tilepath-gui: --view: unknown view '%s'; allowed: %s\n", qPrintable(parser.value(view)),
                 qPrintable(tilepath::ui::MainWindow::viewNames().join(QLatin1Char('|'))));
    return 2;
  }
  if (parser.isSet(open)) {
    if (!window.openDatabase(parser.value(open))) {
      std::fprintf(stderr, "tilepath-gui: %s\n", qPrintable(window.lastError()));
      if (shot) return 1;
    }
  } else {
    window.openStartupDatabase(/*waitForDemo=*/shot);
  }

  if (parser.isSet(timing)) return print_timing(window, clock);
  if (parser.isSet(tour)) {
    window.resize(1280, 800);
    return tour_views(window, parser.value(tour));
  }
  if (!shot) {
    window.show();
    return app.exec();
  }
  window.session()->waitForLoad();

  const QStringList wh = parser.value(size).split(QLatin1Char('x'));
  // 1024×700: the smallest window the layout is made for (tests/gui/test_layout.cpp).
  const int w = wh.size() == 2 ? std::max(1024, wh[0].toInt()) : 1440;
  const int h = wh.size() == 2 ? std::max(700, wh[1].toInt()) : 900;
  window.resize(w, h);
  window.show();
  // Let layouts, chart animations-free painting and fitInView settle before grabbing.
  for (int i = 0; i < 5; ++i) {
    QApplication::processEvents();
    QApplication::sendPostedEvents();
  }
  window.updateAnalysis();
  if (parser.value(view) == QLatin1String("runs")) window.selectComparisonExample();
  QApplication::processEvents();
  QString error;
  if (!tilepath::ui::exportWidget(window, parser.value(screenshot), &error)) {
    std::fprintf(stderr, "tilepath-gui: %s\n", qPrintable(error));
    return 1;
  }
  std::printf("wrote %s (%dx%d)\n", qPrintable(parser.value(screenshot)), window.width(), window.height());
  return 0;
}
