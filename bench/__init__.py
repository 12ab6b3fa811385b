"""Benchmarks run by ``make bench``. Each ``bench/bench_*.py`` module has ``main()``; they print
figures and never assert times."""
