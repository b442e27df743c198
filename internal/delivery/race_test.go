//go:build race

package delivery_test

const raceOn = true
