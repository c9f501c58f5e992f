! The six collectives the PMPI library takes, from Fortran (`use mpi`) on host arrays: run by
! fortran_mpi.sh without and with the library, whose outputs must be the same (the library hands
! host calls to MPI's own Fortran entries). Integer data, so every result is exact.
program collectives_fortran
  use mpi
  implicit none
  integer :: rank, nranks, ierr, i, root
  integer, parameter :: n = 17
  double precision :: x(n), y(n)
  integer :: a(n), b(n)
  integer, allocatable :: g(:), counts(:)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  allocate(g(n * nranks), counts(nranks))
  counts = n
  do i = 1, n
    x(i) = dble(mod(i * (rank + 3), 7))
    a(i) = mod(i * (rank + 5), 11)
  end do
  call MPI_Allreduce(x, y, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, 17f6.1)', 'allreduce', y
  b = a
  call MPI_Allreduce(MPI_IN_PLACE, b, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, 17i4)', 'allreduce in place', b
  do root = 0, nranks - 1
    b = a
    call MPI_Bcast(b, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    if (rank == 0) print '(a, i3, 17i4)', 'bcast', root, b
    b = -1
    call MPI_Reduce(a, b, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
    if (rank == root) print '(a, i3, 17i4)', 'reduce', root, b
  end do
  call MPI_Allgather(a, n, MPI_INTEGER, g, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, 68i4)', 'allgather', g
  g = 1
  call MPI_Reduce_scatter_block(g, b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, 17i4)', 'reduce_scatter_block', b
  call MPI_Reduce_scatter(g, b, counts, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, 17i4)', 'reduce_scatter', b
  call MPI_Finalize(ierr)
end program collectives_fortran
