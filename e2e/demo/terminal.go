package main

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// takeTerminal makes the demo the terminal's foreground process group, so that Ctrl-C reaches the
// demo alone. GNU make dies of a SIGINT by design (it waits for its children, then re-raises the
// signal), which would turn the demo's clean stop into "make: *** Interrupt" and a failed exit;
// with the demo in front, make and `go run` only see their child end. The returned function gives
// the terminal back. Without a terminal (CI, a pipe) it does nothing.
func takeTerminal() (restore func()) {
	fd := int(os.Stdin.Fd())
	prev, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil {
		return func() {}
	}
	// A process outside the foreground group may change it only while ignoring SIGTTOU.
	signal.Ignore(syscall.SIGTTOU)
	if err := syscall.Setpgid(0, 0); err != nil {
		return func() {}
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, syscall.Getpgrp()); err != nil {
		return func() {}
	}
	return func() { _ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, prev) }
}
