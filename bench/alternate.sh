# Sourced by the benchmark scripts: `alternate ROUND SIDE_A SIDE_B` runs one round of two sides,
# SIDE_A first in odd rounds and SIDE_B first in even ones, so that neither side always meets
# the machine warmed up (or disturbed) by the other. Each SIDE is a command that takes the round.
alternate() {
  if [ $(($1 % 2)) -eq 1 ]; then
    "$2" "$1"
    "$3" "$1"
  else
    "$3" "$1"
    "$2" "$1"
  fi
}
