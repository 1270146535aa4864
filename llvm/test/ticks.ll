; Logical-clock ticks: at the entry of every function (after its allocas)
; and on every loop back-edge, an inline countdown of the thread's tick
; budget (det_cc_tls[0]); the runtime is called only when it runs out.
; RUN: %opt-det %s | FileCheck %s
; Without ticks (det-cc --no-ticks), a function without atomics is left alone.
; RUN: %opt-det -det-ticks=false %s | FileCheck %s --check-prefix=NOTICKS

; An executable's budgets: local-exec, its own
; CHECK: @det_cc_tls = linkonce_odr dso_local thread_local(localexec) global [2 x i64] zeroinitializer
; NOTICKS-NOT: det_cc_tls

define i32 @sum(i32 %n) {
; CHECK-LABEL: @sum(
; CHECK-NEXT: entry:
; CHECK-NEXT: %acc = alloca i32
; CHECK-NEXT: [[T:%.*]] = call ptr @llvm.threadlocal.address.p0(ptr @det_cc_tls)
; CHECK-NEXT: [[B:%.*]] = load i64, ptr [[T]]
; CHECK-NEXT: [[L:%.*]] = sub i64 [[B]], 1
; CHECK-NEXT: store i64 [[L]], ptr [[T]]
; CHECK-NEXT: [[OUT:%.*]] = icmp sle i64 [[L]], 0
; CHECK-NEXT: br i1 [[OUT]], label {{%.*}}, label {{%.*}}, !prof
; CHECK: call void @det_cc_slow_local(i32 0)
; a call-free innermost loop counts its ticks in a register...
; CHECK: [[B0:%det.ticks]] = load i64, ptr
; CHECK: loop:
; CHECK-NEXT: [[B:%det.ticks.loop]] = phi i64 [ [[BN:%det.ticks.next]], {{%.*}} ], [ [[B0]], {{%.*}} ]
; CHECK: %c = icmp slt
; CHECK-NEXT: [[B1:%.*]] = sub i64 [[B]], 1
; CHECK-NEXT: [[OUT:%.*]] = icmp sle i64 [[B1]], 0
; ...and writes it back before the runtime reads it, and when it leaves
; CHECK: store i64 [[B1]], ptr
; CHECK-NEXT: call void @det_cc_slow_local(i32 0)
; CHECK-NEXT: [[B2:%.*]] = load i64, ptr
; CHECK: [[BN]] = phi i64 [ [[B1]], %loop ], [ [[B2]], {{%.*}} ]
; CHECK-NEXT: br i1 %c, label %loop, label %done
; CHECK: done:
; CHECK-NEXT: [[V:%det.ticks.out]] = phi i64 [ [[BN]], {{%.*}} ]
; CHECK: store i64 [[V]], ptr
; NOTICKS-LABEL: @sum(
; NOTICKS-NOT: det_cc
; NOTICKS: ret i32
entry:
  %acc = alloca i32
  store i32 0, ptr %acc
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i1, %loop ]
  %a = load i32, ptr %acc
  %a1 = add i32 %a, %i
  store i32 %a1, ptr %acc
  %i1 = add i32 %i, 1
  %c = icmp slt i32 %i1, %n
  br i1 %c, label %loop, label %done
done:
  %r = load i32, ptr %acc
  ret i32 %r
}

; A loop that calls out counts in memory: the callee ticks the same budget.
declare void @g()
define void @calls(i32 %n) {
; CHECK-LABEL: @calls(
; CHECK: loop:
; CHECK-NOT: phi i64
; CHECK: call void @g()
; CHECK: call ptr @llvm.threadlocal.address.p0(ptr @det_cc_tls)
; CHECK-NEXT: load i64
; CHECK-NEXT: sub i64
; CHECK-NEXT: store i64
; CHECK: call void @det_cc_slow_local(i32 0)
; CHECK: br i1 %c, label %loop, label %done
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i1, %loop ]
  call void @g()
  %i1 = add i32 %i, 1
  %c = icmp slt i32 %i1, %n
  br i1 %c, label %loop, label %done
done:
  ret void
}

; The slow path: the runtime's det_cc_slow(budgets, which, site) when
; libdet.so is loaded, else the budget is refilled (a native run).
; CHECK: ; Function Attrs: cold noinline nounwind
; CHECK-NEXT: define linkonce_odr hidden void @det_cc_slow_local(i32 %0)
; CHECK: icmp ne ptr @det_cc_slow, null
; CHECK: call void @det_cc_slow(ptr {{%.*}}, i32 %0, ptr {{%.*}})
; CHECK: store i64 4611686018427387903
; CHECK: declare extern_weak void @det_cc_slow(ptr, i32, ptr)
