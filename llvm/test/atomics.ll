; Every atomic instruction is bracketed by det_cc_atomic_begin(addr, kind,
; aux) and det_cc_atomic_end(value, aux), called only when libdet.so is
; there (extern_weak). Kinds are events.def's ATOMIC_* numbers; aux is the
; size | memory order << 8 | RMW operation << 16.
; RUN: %opt-det %s | FileCheck %s

@x = global i32 0
@p = global ptr null

define i32 @load_acquire() {
; CHECK-LABEL: @load_acquire(
; CHECK: [[ON:%.*]] = icmp ne ptr @det_cc_atomic_begin, null
; CHECK: call void @det_cc_atomic_begin(ptr @x, i32 70, i32 516)
; CHECK: [[V:%.*]] = load atomic i32, ptr @x acquire
; CHECK-NEXT: [[W:%.*]] = zext i32 [[V]] to i64
; CHECK: call void @det_cc_atomic_end(i64 [[W]], i32 516)
  %v = load atomic i32, ptr @x acquire, align 4
  ret i32 %v
}

define void @store_release(i32 %a) {
; CHECK-LABEL: @store_release(
; CHECK: call void @det_cc_atomic_begin(ptr @x, i32 71, i32 772)
; CHECK: store atomic i32 %a, ptr @x release
; CHECK: call void @det_cc_atomic_end(i64 {{%.*}}, i32 772)
  store atomic i32 %a, ptr @x release, align 4
  ret void
}

define i32 @fetch_add() {
; CHECK-LABEL: @fetch_add(
; add is AtomicRMWInst::Add = 1; seq_cst = 5
; CHECK: call void @det_cc_atomic_begin(ptr @x, i32 72, i32 66820)
; CHECK: atomicrmw add ptr @x, i32 1 seq_cst
  %old = atomicrmw add ptr @x, i32 1 seq_cst
  ret i32 %old
}

define i1 @cas_pointer(ptr %want, ptr %new) {
; CHECK-LABEL: @cas_pointer(
; CHECK: call void @det_cc_atomic_begin(ptr @p, i32 73, i32 1288)
; CHECK: [[R:%.*]] = cmpxchg ptr @p, ptr %want, ptr %new seq_cst seq_cst
; CHECK: [[OLD:%.*]] = extractvalue { ptr, i1 } [[R]], 0
; CHECK: ptrtoint ptr [[OLD]] to i64
; the outcome goes into aux bit 31
; CHECK: [[OK:%.*]] = extractvalue { ptr, i1 } [[R]], 1
; CHECK: shl i32 {{%.*}}, 31
; CHECK: call void @det_cc_atomic_end(
  %r = cmpxchg ptr @p, ptr %want, ptr %new seq_cst seq_cst
  %ok = extractvalue { ptr, i1 } %r, 1
  ret i1 %ok
}

define void @fences() {
; CHECK-LABEL: @fences(
; CHECK: call void @det_cc_atomic_begin(ptr null, i32 74, i32 1280)
; CHECK-NEXT: br label
; CHECK: fence seq_cst
; A compiler barrier (atomic_signal_fence) is not between threads: untouched.
; CHECK-NOT: det_cc_atomic_begin
; CHECK: fence syncscope("singlethread") seq_cst
; CHECK-NOT: det_cc_atomic_begin
; CHECK: ret void
  fence seq_cst
  fence syncscope("singlethread") seq_cst
  ret void
}

; CHECK: declare extern_weak void @det_cc_atomic_begin(ptr, i32, i32)
; CHECK: declare extern_weak void @det_cc_atomic_end(i64, i32)
