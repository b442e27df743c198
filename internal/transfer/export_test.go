package transfer

// What the black-box tests (package transfer_test, which serve a broker and
// so cannot be in this package) share with the package's own.
var (
	RestoreQueenFixture = restoreQueenFixture
	ReadExpected        = readExpected
	SameJSON            = sameJSON
	Deref               = deref
)
