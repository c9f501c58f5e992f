echo "SKIP: fortran (not written yet)"
