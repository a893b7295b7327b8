// Package deploy holds what operators install next to an agent that uses agentbreaker:
//
//   - prometheus/agentbreaker.rules.yml: the alerting rules, with their unit tests in
//     prometheus/agentbreaker.rules.test.yml (run by promtool test rules);
//   - grafana/agentbreaker.json: a Grafana dashboard over the same metrics;
//   - README.md: the alert table with measured fire times, a runbook per alert, and the
//     metric table.
//
// The package has no Go API. Its tests run promtool on the rules and check that every
// query in the rules and the dashboard names only metrics the telemetry package
// exports, read from a real registry, so a renamed metric breaks the build rather than
// a dashboard in production. TestAlertFireTimes runs every alert through promtool with
// 15 s scrapes, 1 m evaluations and three scrape phases, measures when it starts
// firing and checks that against the alert table of README.md. promtool comes from Debian's prometheus package; the tests
// skip without it, except under CI=true, where its absence fails them.
package deploy
