// Package usage is the error of a command called wrongly: a flag value out of range, inputs
// that do not go together, a source that cannot work as given. The packages that check a
// command's options return it where the mistake is found, and kvcheck exits 2 on it by its type.
package usage

import (
	"errors"
	"fmt"
)

// Error marks an error caused by how the command was called.
type Error struct{ Err error }

func (e Error) Error() string { return e.Err.Error() }

// Unwrap returns the error the usage error wraps.
func (e Error) Unwrap() error { return e.Err }

// Errorf formats a usage error as fmt.Errorf does.
func Errorf(format string, args ...any) error {
	return Error{fmt.Errorf(format, args...)}
}

// Wrap makes err a usage error; nil stays nil.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return Error{err}
}

// Is reports whether err, or an error it wraps, is a usage error.
func Is(err error) bool {
	var e Error
	return errors.As(err, &e)
}
