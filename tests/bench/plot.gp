# tests/bench/plot.gp - the benchmark suite's plot, for gnuplot
#
# Draws plot.dat (written by tests/bench/report.py: a label, etcdfs's cost
# divided by the baseline's, and the target or "?") as bars on a log scale,
# with a line at 1 (as fast as the baseline) and the targets as marks.
# Called by tests/bench/run.sh as
#   gnuplot -e "datafile='DIR/plot.dat'; outfile='DIR/results.png'" plot.gp
# It cannot draw anything the table does not hold: the table is the record.

if (!exists("datafile")) datafile = 'plot.dat'
if (!exists("outfile")) outfile = 'results.png'

set terminal pngcairo size 1200,640 font ",10" noenhanced
set output outfile
set title "etcdfs: cost relative to the baseline (1 = as fast; lower is better)"
set datafile missing "?"
set logscale y 10
set autoscale y
set offsets 0, 0, graph 0.08, 0
set grid ytics
set ylabel "etcdfs cost ÷ baseline cost"
set xtics rotate by -40 left nomirror
set style fill solid 0.6 border -1
set boxwidth 0.7
set key top left
set bmargin 11
set rmargin 14
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb "gray30"
plot datafile using 0:2:xtic(1) with boxes lc rgb "#4472c4" title "measured", \
     '' using 0:2:($2 < 10 ? sprintf("%.2f", $2) : sprintf("%.0f", $2)) with labels offset 0,0.8 notitle, \
     '' using 0:3 with points pt 9 ps 2 lc rgb "#c00000" title "target (at most)"
