package main

import (
	"context"
	"testing"

	"github.com/queen-go/queen/client"
	"github.com/queen-go/queen/internal/testbroker"
)

func TestRequestReply(t *testing.T) {
	c, err := client.New(client.Config{URL: testbroker.SQLite(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, c) }()
	for i := range 3 {
		got, err := ask(t.Context(), c, i, 10)
		if err != nil || got != i+10 {
			t.Fatalf("ask(%d, 10) = %d, %v", i, got, err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
