"""The machinery cases run on: outcomes, clocks, recorded connections, the case registry
(``cases``: the suites register into it; whoever runs them hands ``load_cases`` the suite
package), the contexts (``context.CaseContext`` and its siblings ``CoordinatorContext`` and
``worker.WorkerContext``), sessions, targets and their commands, the scope of a run, golden
replay and the runner. Suites (``conformance.suites``) only use this package."""
