# Checks print_threads' rows: 12 tab-separated integers each, with global = block_dim * block +
# thread (block_dim = 4, 4, 2) and the calculated columns equal to global_idx; counts rows and
# distinct global indices.
BEGIN { FS = "\t"; rows = 0; bad = 0; after_done = 0; done = 0 }
NR <= 3 { next }
$0 == "Done" { done = 1; next }
{
    if (done) { after_done++; next }
    if (NF != 12) { bad++; next }
    rows++
    if ($7 != 4 * $1 + $4 || $8 != 4 * $2 + $5 || $9 != 2 * $3 + $6) bad++
    if ($7 != $10 || $8 != $11 || $9 != $12) bad++
    key = $7 "," $8 "," $9
    if (!(key in seen)) { seen[key] = 1; distinct++ }
}
END { printf "rows=%d distinct=%d bad=%d after_done=%d\n", rows, distinct, bad, after_done }
