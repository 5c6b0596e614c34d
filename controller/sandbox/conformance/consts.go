package conformance

import (
	"fmt"
	"time"
)

type phase int

const (
	phasePending phase = iota
	phaseCreating
	_
	phaseReady
)

func (p phase) String() string {
	switch p {
	case phasePending:
		return "Pending"
	case phaseCreating:
		return "Creating"
	case phaseReady:
		return "Ready"
	}
	return fmt.Sprintf("phase(%d)", int(p))
}

const (
	_  = iota
	kb = 1 << (10 * iota)
	mb
	gb
)

type flag uint8

const (
	flagA flag = 1 << iota
	flagB
	flagC
)

// ConstsIota counts with iota, skips and expressions.
func ConstsIota() string {
	return fmt.Sprint(phasePending, phaseCreating, phaseReady, phase(2), kb, mb, gb/mb, flagA|flagC, flagB)
}

// ConstsTypedAndUntyped mixes untyped constants with typed values.
func ConstsTypedAndUntyped() string {
	const big = 1 << 40
	const ratio = 2.5
	var d time.Duration = 3 * time.Second
	half := d / 2
	n := int64(big >> 38)
	f := ratio * 2
	var u8 uint8 = 200
	u8 += 100
	var i32 int32 = 1<<31 - 1
	i32++
	return fmt.Sprint(half, " ", n, " ", f, " ", u8, " ", i32, " ", 7/2, " ", -7/2, " ", -7%3, " ", 7.0/2)
}

// ConstsDurations formats and computes time.Duration values.
func ConstsDurations() string {
	requeue := 30 * time.Second
	backoff := time.Duration(1<<3) * 100 * time.Millisecond
	d, err := time.ParseDuration("1m30s")
	return fmt.Sprint(requeue, " ", backoff, " ", d, " ", err, " ", d > requeue, " ", d.Seconds())
}
