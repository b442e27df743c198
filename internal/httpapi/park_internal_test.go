package httpapi

import (
	"io"
	"net"
	"testing"
)

// A connection that parks poll after poll is handed back through one
// layer, and reads what each parking kept in the order the client sent it.
func TestReplayConnDoesNotNestAcrossParkings(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	var c net.Conn = server
	c = replayOf(c, []byte("GET /b"))
	for range 1000 {
		c = replayOf(c, nil)
	}
	// The next parking read "GET /a" before the rest of what the previous
	// one kept was read.
	c = replayOf(c, []byte("GET /a "))
	rc, ok := c.(*replayConn)
	if !ok || rc.Conn != server {
		t.Fatalf("handed back %T wrapping %T, want one replayConn around the accepted connection", c, rc.Conn)
	}
	go func() { _, _ = client.Write([]byte(" HTTP/1.1")); _ = client.Close() }()
	got, err := io.ReadAll(c)
	if err != nil && err != io.EOF {
		t.Fatal(err)
	}
	if string(got) != "GET /a GET /b HTTP/1.1" {
		t.Fatalf("read %q", got)
	}
}
