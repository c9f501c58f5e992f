! The six collectives the PMPI library takes, called from Fortran through each of MPI's Fortran
! interfaces (one source, chosen by the preprocessor): `include 'mpif.h'` (-DHPCOLLS_MPIFH),
! `use mpi` (the default) and `use mpi_f08` (-DHPCOLLS_F08). fortran_mpi.sh runs each without and
! with the library (LD_PRELOAD):
!   - on host arrays, every result folded into one digest per rank, printed on the `digest` line:
!     the two runs must print the same (every call bitwise as without the library, host arrays
!     handed to MPI untouched); with the library, every call must also have gone through it (its
!     call counter moves), so an entry point it does not stand in front of fails here;
!   - with the library, each call again on device memory, whose result must equal the host one
!     bitwise (complex PROD by value: a zero part's sign follows the order of the multiplications,
!     which MPI leaves open): Fortran handles converted to C's, Fortran's MPI_IN_PLACE read as
!     C's. On a CPU machine pretend device memory (fortran_support.c: a range MPI faults on,
!     which the library stages through host memory); on a GPU machine, with
!     HPCOLLS_TEST_DEVICE=cuda, memory on the GPU, which the library's kernels take
!     (tests/pmpi/fortran_gpu.sh).
! REAL*8, REAL*4, INTEGER*4, INTEGER*8 and COMPLEX*16 with SUM, MAX, MIN and PROD (no MAX/MIN of
! COMPLEX), counts 1, 3, 17 and 1000, in place and not, every root. Random data, fresh each run
! (HPCOLLS_TEST_SEED, the same on every rank), outputs poisoned before each call.
module fortran_support
  use, intrinsic :: iso_c_binding
  implicit none
  interface
    integer(c_int) function hpcolls_test_init() bind(C)
      import :: c_int
    end function
    integer(c_long_long) function hpcolls_test_calls() bind(C)
      import :: c_long_long
    end function
    type(c_ptr) function hpcolls_test_device() bind(C)
      import :: c_ptr
    end function
    integer(c_size_t) function hpcolls_test_device_bytes() bind(C)
      import :: c_size_t
    end function
    subroutine hpcolls_test_open(on) bind(C)
      import :: c_int
      integer(c_int), value :: on
    end subroutine
    integer(c_int) function hpcolls_test_seed() bind(C)
      import :: c_int
    end function
    integer(c_int) function hpcolls_test_no_inplace_reduce_roots() bind(C)
      import :: c_int
    end function
    subroutine hpcolls_test_poison(p, bytes, seed) bind(C)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: p
      integer(c_size_t), value :: bytes
      integer(c_int), value :: seed
    end subroutine
    subroutine hpcolls_test_fill(p, count, kind, seed) bind(C)
      import :: c_ptr, c_int
      type(c_ptr), value :: p
      integer(c_int), value :: count, kind, seed
    end subroutine
    subroutine hpcolls_test_mix(p, bytes) bind(C)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_size_t), value :: bytes
    end subroutine
    integer(c_long_long) function hpcolls_test_digest() bind(C)
      import :: c_long_long
    end function
    integer(c_int) function hpcolls_test_same(a, b, bytes) bind(C)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: a, b
      integer(c_size_t), value :: bytes
    end function
    integer(c_int) function hpcolls_test_same_values(a, b, count) bind(C)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: a, b
      integer(c_size_t), value :: count
    end function
  end interface
end module fortran_support

#if defined(HPCOLLS_F08)
#define HPCOLLS_INTERFACE 'use mpi_f08'
#define COMM_T type(MPI_Comm)
#define TYPE_T type(MPI_Datatype)
#define OP_T type(MPI_Op)
#elif defined(HPCOLLS_MPIFH)
#define HPCOLLS_INTERFACE 'mpif.h'
#define COMM_T integer
#define TYPE_T integer
#define OP_T integer
#else
#define HPCOLLS_INTERFACE 'use mpi'
#define COMM_T integer
#define TYPE_T integer
#define OP_T integer
#endif

program collectives_fortran
  use fortran_support
#if defined(HPCOLLS_F08)
  use mpi_f08
#elif !defined(HPCOLLS_MPIFH)
  use mpi
#endif
  implicit none
#if defined(HPCOLLS_MPIFH)
  include 'mpif.h'
#endif
  integer, parameter :: ALLREDUCE = 1, BCAST = 2, REDUCE = 3, ALLGATHER = 4, RSB = 5, RS = 6
  character(len=20), parameter :: names(6) = [character(len=20) :: 'Allreduce', 'Bcast', 'Reduce', &
                                              'Allgather', 'Reduce_scatter_block', 'Reduce_scatter']
  integer, parameter :: sizes(5) = [8, 4, 4, 8, 16]
  integer, parameter :: counts(4) = [1, 3, 17, 1000]
  TYPE_T :: types(5)
  OP_T :: ops(4)
  integer :: rank, nranks, ierr, failures, all_failures, seed, s, c, ti, oi, ci, ip, root, checked
  logical :: loaded, inplace_reduce_roots
  integer(8), allocatable :: digests(:)
  integer(8) :: digest

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  types = [MPI_DOUBLE_PRECISION, MPI_REAL, MPI_INTEGER, MPI_INTEGER8, MPI_DOUBLE_COMPLEX]
  ops = [MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD]
  failures = 0
  checked = 0
  loaded = hpcolls_test_init() /= 0
  if (.not. loaded .and. rank == 0) print '(a)', 'note: the PMPI library is not loaded: host arrays only'
  inplace_reduce_roots = hpcolls_test_no_inplace_reduce_roots() == 0
  seed = mod(hpcolls_test_seed(), 1000000)
  call MPI_Bcast(seed, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)

  do ti = 1, 5
    do oi = 1, 4
      if (ti == 5 .and. (oi == 2 .or. oi == 3)) cycle
      do ci = 1, 4
        do ip = 0, 1
          c = counts(ci)
          s = seed + 977 * (ti * 100 + oi * 10 + ci)
          call both(ALLREDUCE, c, ti, oi, 0, ip, c, c, s)
          call both(RSB, c, ti, oi, 0, ip, c * nranks, merge(c * nranks, c, ip == 1), s + 1)
          call both(RS, c, ti, oi, 0, ip, c * nranks, merge(c * nranks, c, ip == 1), s + 2)
          do root = 0, nranks - 1
            if (ip == 0 .or. root == 0 .or. inplace_reduce_roots) &
              call both(REDUCE, c, ti, oi, root, ip, c, c, s + 3 + root)
          end do
        end do
      end do
    end do
  end do
  do ti = 1, 5
    do ci = 1, 4
      c = counts(ci)
      do root = 0, nranks - 1
        call both(BCAST, c, ti, 1, root, 0, 0, c, seed + 31 * (ti + ci) + root)
      end do
      do ip = 0, 1
        call both(ALLGATHER, c, ti, 1, 0, ip, c, c * nranks, seed + 7 * ci + ip)
      end do
    end do
  end do

  digest = hpcolls_test_digest()
  allocate(digests(nranks))
  call MPI_Gather(digest, 1, MPI_INTEGER8, digests, 1, MPI_INTEGER8, 0, MPI_COMM_WORLD, ierr)
  call MPI_Reduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    write (*, '(a, *(1x, z16.16))') 'digest', digests
    if (loaded) then
      write (*, '(a, a, a, i0, a, i0, a)') merge('FAIL', 'ok  ', all_failures > 0), ': ', HPCOLLS_INTERFACE // ', ', &
        all_failures, ' failures; ', checked, ' calls on device arrays on rank 0, each equal to the host result'
    else
      write (*, '(a, a, a, i0, a)') merge('FAIL', 'ok  ', all_failures > 0), ': ', HPCOLLS_INTERFACE // ', ', &
        all_failures, ' failures (host arrays only)'
    end if
  end if
  call MPI_Bcast(all_failures, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
  if (all_failures > 0) stop 1

contains

  subroutine fail(what)
    character(len=*), intent(in) :: what
    failures = failures + 1
    write (0, '(a, i0, a, a)') 'rank ', rank, ': FAIL ', what
  end subroutine fail

  ! One collective on host arrays, then (with the library) the same on device arrays.
  subroutine both(coll, count, ti, oi, root, ip, send_elems, recv_elems, seed)
    integer, intent(in) :: coll, count, ti, oi, root, ip, send_elems, recv_elems, seed
    integer(8), allocatable, target :: hs(:), hr(:)
    integer(8), pointer, contiguous :: ds(:), dr(:)
    integer(c_size_t) :: sb, rb, offset
    integer(c_long_long) :: before
    integer :: ws, wr
    logical :: same
    character(len=160) :: what
    sb = int(send_elems, c_size_t) * sizes(ti)
    rb = int(recv_elems, c_size_t) * sizes(ti)
    ws = int(sb / 8) + 1
    wr = int(rb / 8) + 1
    write (what, '(a, a, i0, a, i0, a, i0, a, i0, a, i0)') trim(names(coll)), ' type ', ti, ' op ', oi, &
      ' count ', count, ' root ', root, ' in place ', ip
    allocate(hs(ws), hr(wr))
    call hpcolls_test_fill(c_loc(hs), send_elems, ti, seed + rank)
    call hpcolls_test_poison(c_loc(hr), rb, ieor(seed, 23130))
    if (ip == 1) call hpcolls_test_fill(c_loc(hr), recv_elems, ti, seed + rank)
    before = hpcolls_test_calls()
    call run(coll, hs, hr, ws, wr, count, types(ti), ops(oi), root, ip)
    if (loaded .and. hpcolls_test_calls() <= before) call fail(trim(what) // ': the call did not go through the library')
    call hpcolls_test_mix(c_loc(hr), rb)
    if (.not. loaded) return
    offset = (sb + 63) / 64 * 64
    if (offset + rb > hpcolls_test_device_bytes()) return
    call hpcolls_test_open(1)
    call c_f_pointer(hpcolls_test_device(), ds, [ws])
    call c_f_pointer(transfer(transfer(hpcolls_test_device(), 0_c_intptr_t) + offset, c_null_ptr), dr, [wr])
    call hpcolls_test_fill(c_loc(ds), send_elems, ti, seed + rank)
    call hpcolls_test_poison(c_loc(dr), rb, ieor(seed, 23130))
    if (ip == 1) call hpcolls_test_fill(c_loc(dr), recv_elems, ti, seed + rank)
    call hpcolls_test_open(0)
    call run(coll, ds, dr, ws, wr, count, types(ti), ops(oi), root, ip)
    call hpcolls_test_open(1)
    if (ti == 5 .and. oi == 4) then  ! complex PROD: by value (fortran_support.c says why)
      same = hpcolls_test_same_values(c_loc(dr), c_loc(hr), rb / 8) /= 0
    else
      same = hpcolls_test_same(c_loc(dr), c_loc(hr), rb) /= 0
    end if
    if (.not. same) call fail(trim(what) // ': the result on device arrays differs from the host result')
    call hpcolls_test_open(0)
    checked = checked + 1
  end subroutine both

  subroutine run(coll, s, r, ws, wr, count, dtype, op, root, ip)
    integer, intent(in) :: coll, ws, wr, count, root, ip
    integer(8) :: s(ws), r(wr)
    TYPE_T, intent(in) :: dtype
    OP_T, intent(in) :: op
    integer :: e, recv_counts(nranks)
    e = MPI_SUCCESS
    select case (coll)
    case (ALLREDUCE)
      if (ip == 1) then
        call MPI_Allreduce(MPI_IN_PLACE, r, count, dtype, op, MPI_COMM_WORLD, e)
      else
#if defined(HPCOLLS_F08)
        ! mpi_f08's ierror is optional: left out here
        call MPI_Allreduce(s, r, count, dtype, op, MPI_COMM_WORLD)
#else
        call MPI_Allreduce(s, r, count, dtype, op, MPI_COMM_WORLD, e)
#endif
      end if
    case (BCAST)
      call MPI_Bcast(r, count, dtype, root, MPI_COMM_WORLD, e)
    case (REDUCE)
      if (ip == 1 .and. rank == root) then
        call MPI_Reduce(MPI_IN_PLACE, r, count, dtype, op, root, MPI_COMM_WORLD, e)
      else
        call MPI_Reduce(s, r, count, dtype, op, root, MPI_COMM_WORLD, e)
      end if
    case (ALLGATHER)
      if (ip == 1) then
        call MPI_Allgather(MPI_IN_PLACE, count, dtype, r, count, dtype, MPI_COMM_WORLD, e)
      else
        call MPI_Allgather(s, count, dtype, r, count, dtype, MPI_COMM_WORLD, e)
      end if
    case (RSB)
      if (ip == 1) then
        call MPI_Reduce_scatter_block(MPI_IN_PLACE, r, count, dtype, op, MPI_COMM_WORLD, e)
      else
        call MPI_Reduce_scatter_block(s, r, count, dtype, op, MPI_COMM_WORLD, e)
      end if
    case (RS)
      recv_counts = count
      if (ip == 1) then
        call MPI_Reduce_scatter(MPI_IN_PLACE, r, recv_counts, dtype, op, MPI_COMM_WORLD, e)
      else
        call MPI_Reduce_scatter(s, r, recv_counts, dtype, op, MPI_COMM_WORLD, e)
      end if
    end select
    if (e /= MPI_SUCCESS) call fail(trim(names(coll)) // ': an error code')
  end subroutine run

end program collectives_fortran
