module github.com/narad/narad

go 1.26.8

require (
	go.uber.org/goleak v1.3.0
	pgregory.net/rapid v1.3.0
)
