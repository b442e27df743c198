package enginetest_test

import (
	"testing"

	"github.com/queen-go/queen/internal/store/enginetest"
)

func TestMain(m *testing.M) { enginetest.Main(m) }
