// Package deploy holds what installs and watches the broker: the systemd
// unit and its environment file, the package scripts, the Prometheus
// alerting rules and the Grafana dashboard. It has no code; its test
// checks that every expression of the kit names a family the broker
// exports.
package deploy
