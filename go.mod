module parley

go 1.26.8
