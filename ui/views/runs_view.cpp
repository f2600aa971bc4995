#include "ui/views/runs_view.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/database_session.h"
#include "ui/models/case_comparison_model.h"
#include "ui/models/cases_model.h"
#include "ui/models/runs_model.h"
#include "ui/views/profiler_panel.h"

namespace tilepath::ui {

// Cases of the selected run (if any) whose text matches every word of the filter.
class CaseFilterProxy : public QSortFilterProxyModel {
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;
  void setRun(std::optional<qint64> run) {
    run_ = run;
    invalidateFilter();
  }
  void setWords(const QString& text) {
    words_ = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    invalidateFilter();
  }

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override {
    const QAbstractItemModel* m = sourceModel();
    if (run_ && m->index(row, CasesModel::Run, parent).data(CasesModel::SortRole).toLongLong() != *run_) return false;
    if (words_.isEmpty()) return true;
    QString text;
    for (int c = 0; c < m->columnCount(); ++c) text += m->index(row, c, parent).data().toString() + QLatin1Char(' ');
    for (const QString& w : words_) {
      // "key=value" matches a column by header name (e.g. kv=k8v8, S=4096).
      int eq = w.indexOf(QLatin1Char('='));
      if (eq > 0) {
        const QString key = w.left(eq), value = w.mid(eq + 1);
        bool matched = false;
        for (int c = 0; c < m->columnCount(); ++c)
          if (m->headerData(c, Qt::Horizontal).toString().compare(key, Qt::CaseInsensitive) == 0)
            matched = m->index(row, c, parent).data().toString().compare(value, Qt::CaseInsensitive) == 0;
        if (!matched) return false;
      } else if (!text.contains(w, Qt::CaseInsensitive)) {
        return false;
      }
    }
    return true;
  }

 private:
  std::optional<qint64> run_;
  QStringList words_;
};

namespace {
QTableView* makeTable(QAbstractItemModel* model, bool sortable) {
  auto* t = new QTableView;
  t->setModel(model);
  t->setSortingEnabled(sortable);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->verticalHeader()->hide();
  t->verticalHeader()->setDefaultSectionSize(22);
  t->horizontalHeader()->setStretchLastSection(true);
  t->setAlternatingRowColors(true);
  return t;
}
}  // namespace

RunsView::RunsView(DatabaseSession* session, QWidget* parent) : QWidget(parent), session_(session) {
  runs_model_ = new RunsModel(this);
  cases_model_ = new CasesModel(this);
  cases_proxy_ = new CaseFilterProxy(this);
  cases_proxy_->setSourceModel(cases_model_);
  cases_proxy_->setSortRole(CasesModel::SortRole);
  comparison_model_ = new CaseComparisonModel(this);

  auto* runs_proxy = new QSortFilterProxyModel(this);
  runs_proxy->setSourceModel(runs_model_);
  runs_proxy->setSortRole(RunsModel::SortRole);
  runs_table_ = makeTable(runs_proxy, true);
  runs_table_->setSelectionMode(QAbstractItemView::SingleSelection);
  cases_table_ = makeTable(cases_proxy_, true);
  cases_table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  comparison_table_ = makeTable(comparison_model_, false);
  comparison_table_->setSelectionMode(QAbstractItemView::NoSelection);
  comparison_table_->setColumnHidden(CaseComparisonModel::Section, true);  // field names say it; saves width

  filter_ = new QLineEdit;
  filter_->setPlaceholderText(tr("filter cases: words or column=value, e.g. \"kv=k8v8 cold separate_kv\""));
  filter_->setClearButtonEnabled(true);
  connect(filter_, &QLineEdit::textChanged, this, [this](const QString& t) { cases_proxy_->setWords(t); });
  auto* all_runs = new QPushButton(tr("All runs"));
  connect(all_runs, &QPushButton::clicked, this, [this] { runs_table_->clearSelection(); });
  counts_ = new QLabel;

  connect(cases_table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &RunsView::onCaseSelectionChanged);
  connect(runs_table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &RunsView::onRunSelectionChanged);

  auto* filter_row = new QHBoxLayout;
  filter_row->addWidget(filter_, 1);
  filter_row->addWidget(all_runs);
  filter_row->addWidget(counts_);
  auto* cases_box = new QWidget;
  auto* cases_layout = new QVBoxLayout(cases_box);
  cases_layout->setContentsMargins(0, 0, 0, 0);
  cases_layout->addLayout(filter_row);
  cases_layout->addWidget(cases_table_, 1);
  auto* compare_box = new QWidget;
  auto* compare_layout = new QVBoxLayout(compare_box);
  compare_layout->setContentsMargins(0, 0, 0, 0);
  compare_layout->addWidget(new QLabel(tr("<b>Compare</b> — select two cases (Ctrl+click)")));
  compare_layout->addWidget(comparison_table_, 1);
  profiler_ = new ProfilerPanel;
  auto* compare_and_profile = new QSplitter(Qt::Vertical);
  compare_and_profile->addWidget(compare_box);
  compare_and_profile->addWidget(profiler_);

  auto* right = new QSplitter(Qt::Horizontal);
  right->addWidget(cases_box);
  right->addWidget(compare_and_profile);
  right->setStretchFactor(0, 1);
  right->setStretchFactor(1, 1);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(runs_table_);
  split->addWidget(right);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 3);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(split);
}

const QAbstractItemModel* RunsView::visibleCases() const { return cases_proxy_; }

void RunsView::setFilterText(const QString& text) { filter_->setText(text); }

void RunsView::reload() {
  runs_model_->setRuns(session_->runs(), session_->cases());
  cases_model_->setCases(session_->cases());
  runs_table_->resizeColumnsToContents();
  cases_table_->resizeColumnsToContents();
  counts_->setText(tr("%1 runs, %2 cases").arg(session_->runs().size()).arg(session_->cases().size()));
}

void RunsView::selectCases(const QList<qint64>& caseIds) {
  QItemSelection selection;
  for (qint64 id : caseIds) {
    int row = cases_model_->rowOfCase(id);
    if (row < 0) continue;
    QModelIndex proxy_index = cases_proxy_->mapFromSource(cases_model_->index(row, 0));
    if (proxy_index.isValid()) selection.select(proxy_index, proxy_index);
  }
  cases_table_->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  if (!selection.isEmpty()) cases_table_->scrollTo(selection.indexes().front(), QAbstractItemView::PositionAtCenter);
}

void RunsView::onRunSelectionChanged() {
  QModelIndexList rows = runs_table_->selectionModel()->selectedRows();
  if (rows.isEmpty())
    cases_proxy_->setRun(std::nullopt);
  else
    cases_proxy_->setRun(rows.front().data(RunsModel::RunIdRole).toLongLong());
}

void RunsView::onCaseSelectionChanged() {
  QModelIndexList rows = cases_table_->selectionModel()->selectedRows();
  std::optional<CaseRecord> a, b;
  if (rows.size() >= 1) a = session_->loadCase(rows[0].data(CasesModel::CaseIdRole).toLongLong());
  if (rows.size() >= 2) b = session_->loadCase(rows[1].data(CasesModel::CaseIdRole).toLongLong());
  comparison_model_->setCases(a, b);
  comparison_table_->resizeColumnsToContents();
  profiler_->setCase(rows.isEmpty() ? CaseRecord{}
                                    : session_->loadCase(rows[0].data(CasesModel::CaseIdRole).toLongLong(),
                                                         /*withArtifacts=*/true));
  if (!rows.isEmpty()) {
    int source = cases_proxy_->mapToSource(rows.front()).row();
    if (source >= 0) emit caseSelected(cases_model_->caseAt(source));
  }
}

}  // namespace tilepath::ui
