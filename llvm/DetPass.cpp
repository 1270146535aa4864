//===- llvm/DetPass.cpp - det-cc's instrumentation pass ------------------===//
//
// A new-pass-manager plugin (clang -fpass-plugin=, opt -load-pass-plugin=
// -passes=det) that makes a program's own thread interactions visible to
// det's runtime, libdet.so:
//  - every atomic instruction (load, store, atomicrmw, cmpxchg, fence: C11
//    and C++ atomics, __sync and __atomic builtins) is bracketed by calls
//    det_cc_atomic_begin(addr, kind, aux) / det_cc_atomic_end(value), so it
//    becomes an event on its memory location;
//  - a logical-clock tick at every function entry and loop back-edge: an
//    inline countdown in a thread-local budget; the runtime is called only
//    when the budget runs out (a quantum ends);
//  - with -det-sched-points=memory, a memory point before every load and
//    store that may touch shared memory (the same countdown on a second
//    budget): strict mode may switch threads there, so a race window with
//    no call in it can be entered.
//
// Rules of this file:
//  - Event kind numbers come from include/det/events.def (one definition).
//  - The runtime entry points are extern_weak: a program built with det-cc
//    runs natively without libdet.so (the calls are skipped, the budgets
//    refilled), and under det when libdet.so is preloaded.
//  - Instrument after optimization (OptimizerLast), like the sanitizers:
//    the ticks and points do not stop the optimizer, and what is counted is
//    what the machine code does. The pass is required: it runs on optnone
//    functions (-O0) too.
//  - An innermost loop that calls nothing and touches no atomic or shared
//    memory counts its ticks in a register (a phi) instead of the budget in
//    memory, and writes it back when the loop is left or the budget runs
//    out: the same counts, without a store-to-load dependency per
//    iteration. Nothing in such a loop reads the budget meanwhile.
//  - Everything is deterministic in the IR alone (no addresses, no
//    randomness): the same source gives the same counts.
//===----------------------------------------------------------------------===//

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/CFG.h"
#include "llvm/Analysis/CaptureTracking.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"
#if __has_include("llvm/Plugins/PassPlugin.h")
#include "llvm/Plugins/PassPlugin.h" // LLVM 22 moved it
#else
#include "llvm/Passes/PassPlugin.h"
#endif

extern "C" {
#include "det/cc.h"
#include "det/events.h"
}

#include <type_traits>

using namespace llvm;

static cl::opt<std::string> SchedPoints(
    "det-sched-points", cl::init("none"),
    cl::desc("det: where strict mode may switch threads besides events and ticks: none | memory"));
static cl::opt<bool> Ticks("det-ticks", cl::init(true),
                           cl::desc("det: logical-clock ticks at function entries and loop back-edges"));

namespace {

// The runtime ABI: include/det/cc.h (preload/atomics.c implements it).
// A runtime entry's name is spelled from its prototype there, and the IR
// types built below are those of the prototypes (checked here).
#define CC_ENTRY(fn) ((void)&fn, #fn)
constexpr const char *TLS_NAME = DET_CC_TLS;          // { i64 tick budget, i64 point budget }
constexpr const char *SLOW_NAME = CC_ENTRY(det_cc_slow); // (ptr tls, i32 which, ptr site)
constexpr const char *LOCAL_SLOW = DET_CC_SLOW_LOCAL; // (i32 which): calls it, or refills
constexpr const char *BEGIN_NAME = CC_ENTRY(det_cc_atomic_begin); // (ptr addr, i32 kind, i32 aux)
constexpr const char *END_NAME = CC_ENTRY(det_cc_atomic_end);     // (i64 value, i32 aux)
static_assert(std::is_same_v<decltype(det_cc_slow), void(int64_t *, int32_t, void *)>, "det_cc_slow's IR type");
static_assert(std::is_same_v<decltype(det_cc_atomic_begin), void(void *, uint32_t, uint32_t)>,
              "det_cc_atomic_begin's IR type");
static_assert(std::is_same_v<decltype(det_cc_atomic_end), void(uint64_t, uint32_t)>, "det_cc_atomic_end's IR type");
constexpr int WHICH_TICK = DET_CC_TICK, WHICH_POINT = DET_CC_POINT;
constexpr int64_t REFILL = DET_CC_REFILL;

struct DetInstrument {
  Module &M;
  LLVMContext &C;
  Type *I32, *I64, *Ptr;
  GlobalVariable *Tls = nullptr;
  Function *LocalSlow = nullptr;
  FunctionCallee Begin, End;
  Function *BeginFn = nullptr;
  bool Memory;

  explicit DetInstrument(Module &Mod)
      : M(Mod), C(Mod.getContext()), I32(Type::getInt32Ty(C)), I64(Type::getInt64Ty(C)),
        Ptr(PointerType::getUnqual(C)), Memory(SchedPoints == "memory") {}

  // The budgets: one per thread, shared by every det-cc module of the
  // process (default visibility: det-cc exports the executable's copy).
  GlobalVariable *tls() {
    if (Tls)
      return Tls;
    auto *Ty = ArrayType::get(I64, 2);
    Tls = cast<GlobalVariable>(M.getOrInsertGlobal(TLS_NAME, Ty));
    if (Tls->isDeclaration()) {
      Tls->setInitializer(ConstantAggregateZero::get(Ty));
      Tls->setLinkage(GlobalValue::LinkOnceODRLinkage);
    }
    bool SharedLib = M.getPICLevel() != PICLevel::NotPIC && M.getPIELevel() == PIELevel::Default;
    Tls->setThreadLocalMode(SharedLib ? GlobalValue::InitialExecTLSModel : GlobalValue::LocalExecTLSModel);
    Tls->setDSOLocal(!SharedLib);
    return Tls;
  }

  // det_cc_slow_local(which): the cold path of a tick or point.
  Function *localSlow() {
    if (LocalSlow)
      return LocalSlow;
    auto *FTy = FunctionType::get(Type::getVoidTy(C), {I32}, false);
    LocalSlow = Function::Create(FTy, GlobalValue::LinkOnceODRLinkage, LOCAL_SLOW, M);
    LocalSlow->setVisibility(GlobalValue::HiddenVisibility);
    LocalSlow->addFnAttr(Attribute::NoInline);
    LocalSlow->addFnAttr(Attribute::Cold);
    LocalSlow->addFnAttr(Attribute::NoUnwind);
    auto *SlowTy = FunctionType::get(Type::getVoidTy(C), {Ptr, I32, Ptr}, false);
    auto *Slow = cast<Function>(M.getOrInsertFunction(SLOW_NAME, SlowTy).getCallee());
    Slow->setLinkage(GlobalValue::ExternalWeakLinkage);
    auto *Entry = BasicBlock::Create(C, "entry", LocalSlow);
    auto *Call = BasicBlock::Create(C, "runtime", LocalSlow);
    auto *Refill = BasicBlock::Create(C, "native", LocalSlow);
    IRBuilder<> B(Entry);
    Value *Tp = B.CreateThreadLocalAddress(tls());
    B.CreateCondBr(B.CreateICmpNE(Slow, ConstantPointerNull::get(cast<PointerType>(Ptr))), Call, Refill);
    B.SetInsertPoint(Call);
    Value *Site = B.CreateIntrinsic(Intrinsic::returnaddress, {}, {B.getInt32(0)});
    B.CreateCall(SlowTy, Slow, {Tp, LocalSlow->getArg(0), Site});
    B.CreateRetVoid();
    B.SetInsertPoint(Refill);
    Value *Slot = B.CreateGEP(I64, Tp, LocalSlow->getArg(0));
    B.CreateStore(ConstantInt::get(I64, REFILL), Slot);
    B.CreateRetVoid();
    return LocalSlow;
  }

  // budget[which] -= 1; if it ran out, call the runtime.
  void countdown(Instruction *Before, int Which) {
    IRBuilder<> B(Before);
    Value *Tp = B.CreateThreadLocalAddress(tls());
    Value *Slot = Which ? B.CreateConstInBoundsGEP1_64(I64, Tp, Which) : Tp;
    Value *Left = B.CreateSub(B.CreateLoad(I64, Slot, "det.budget"), ConstantInt::get(I64, 1));
    B.CreateStore(Left, Slot);
    Value *Out = B.CreateICmpSLE(Left, ConstantInt::get(I64, 0));
    MDNode *Rare = MDBuilder(C).createUnlikelyBranchWeights();
    Instruction *Then = SplitBlockAndInsertIfThen(Out, Before, false, Rare);
    IRBuilder<> T(Then);
    T.CreateCall(localSlow(), {T.getInt32(Which)});
  }

  // Provably private to the thread: a local that never escapes, a
  // constant, a thread-local variable.
  static bool threadLocal(Value *P) {
    const Value *U = getUnderlyingObject(P, 0);
    if (auto *A = dyn_cast<AllocaInst>(U))
      return !PointerMayBeCaptured(A, /*ReturnCaptures=*/true);
    if (auto *G = dyn_cast<GlobalVariable>(U))
      return G->isConstant() || G->isThreadLocal();
    if (isa<Constant>(U) && !isa<GlobalValue>(U))
      return true;
    return false;
  }

  static Value *pointerOf(Instruction *I) {
    if (auto *L = dyn_cast<LoadInst>(I))
      return L->getPointerOperand();
    if (auto *S = dyn_cast<StoreInst>(I))
      return S->getPointerOperand();
    return nullptr;
  }

  static unsigned order(AtomicOrdering O) {
    // The C11 memory_order numbering: relaxed 0, consume 1, acquire 2,
    // release 3, acq_rel 4, seq_cst 5.
    switch (O) {
    case AtomicOrdering::Monotonic: return 0;
    case AtomicOrdering::Acquire: return 2;
    case AtomicOrdering::Release: return 3;
    case AtomicOrdering::AcquireRelease: return 4;
    case AtomicOrdering::SequentiallyConsistent: return 5;
    default: return 0;
    }
  }

  // The value an atomic instruction read or wrote, as an i64.
  Value *asI64(IRBuilder<> &B, Value *V) {
    Type *Ty = V->getType();
    const DataLayout &DL = M.getDataLayout();
    if (Ty->isPointerTy())
      return B.CreatePtrToInt(V, I64);
    if (!Ty->isIntegerTy()) {
      unsigned Bits = DL.getTypeSizeInBits(Ty);
      if (Bits == 0 || Bits > 128)
        return ConstantInt::get(I64, 0);
      V = B.CreateBitCast(V, IntegerType::get(C, Bits));
    }
    return B.CreateZExtOrTrunc(V, I64);
  }

  void declareRuntime() {
    if (BeginFn)
      return;
    auto *BTy = FunctionType::get(Type::getVoidTy(C), {Ptr, I32, I32}, false);
    auto *ETy = FunctionType::get(Type::getVoidTy(C), {I64, I32}, false);
    Begin = M.getOrInsertFunction(BEGIN_NAME, BTy);
    End = M.getOrInsertFunction(END_NAME, ETy);
    BeginFn = cast<Function>(Begin.getCallee());
    BeginFn->setLinkage(GlobalValue::ExternalWeakLinkage);
    cast<Function>(End.getCallee())->setLinkage(GlobalValue::ExternalWeakLinkage);
  }

  // begin(addr, kind, aux); the instruction; end(value, aux) - both only
  // when libdet.so is there.
  void atomic(Instruction *I) {
    const DataLayout &DL = M.getDataLayout();
    Value *Addr = nullptr, *Result = nullptr;
    Type *AccTy = nullptr;
    unsigned Kind = 0, Aux = 0;
    if (auto *L = dyn_cast<LoadInst>(I)) {
      Kind = DET_EV_ATOMIC_LOAD, Addr = L->getPointerOperand(), AccTy = L->getType();
      Aux = order(L->getOrdering()) << 8;
    } else if (auto *S = dyn_cast<StoreInst>(I)) {
      Kind = DET_EV_ATOMIC_STORE, Addr = S->getPointerOperand(), AccTy = S->getValueOperand()->getType();
      Aux = order(S->getOrdering()) << 8;
    } else if (auto *R = dyn_cast<AtomicRMWInst>(I)) {
      Kind = DET_EV_ATOMIC_RMW, Addr = R->getPointerOperand(), AccTy = R->getType();
      Aux = DET_ATOMIC_AUX(0, order(R->getOrdering()), (unsigned)R->getOperation());
    } else if (auto *X = dyn_cast<AtomicCmpXchgInst>(I)) {
      Kind = DET_EV_ATOMIC_CMPXCHG, Addr = X->getPointerOperand(), AccTy = X->getCompareOperand()->getType();
      Aux = order(X->getSuccessOrdering()) << 8;
    } else if (auto *F = dyn_cast<FenceInst>(I)) {
      Kind = DET_EV_ATOMIC_FENCE, Addr = ConstantPointerNull::get(cast<PointerType>(Ptr));
      Aux = order(F->getOrdering()) << 8;
    } else {
      return;
    }
    if (AccTy)
      Aux |= (unsigned)DL.getTypeStoreSize(AccTy).getFixedValue() & 0xff;
    declareRuntime();
    IRBuilder<> B(I);
    Value *On = B.CreateICmpNE(BeginFn, ConstantPointerNull::get(cast<PointerType>(Ptr)), "det.on");
    Instruction *Then = SplitBlockAndInsertIfThen(On, I, false);
    IRBuilder<> TB(Then);
    TB.CreateCall(Begin, {Addr, TB.getInt32(Kind), TB.getInt32(Aux)});

    Instruction *After = I->getNextNode();
    IRBuilder<> AB(After);
    if (auto *S = dyn_cast<StoreInst>(I))
      Result = S->getValueOperand();
    else if (isa<AtomicCmpXchgInst>(I))
      Result = AB.CreateExtractValue(I, 0);
    else if (!isa<FenceInst>(I))
      Result = I;
    Value *V = Result ? asI64(AB, Result) : ConstantInt::get(I64, 0);
    Value *EndAux = AB.getInt32(Aux);
    if (isa<AtomicCmpXchgInst>(I))
      EndAux = AB.CreateOr(EndAux, AB.CreateShl(AB.CreateZExt(AB.CreateExtractValue(I, 1), I32), 31));
    Instruction *EndThen = SplitBlockAndInsertIfThen(On, After, false);
    IRBuilder<> EB(EndThen);
    EB.CreateCall(End, {V, EndAux});
  }

  // The tick of a call-free innermost loop, kept in a register. Returns
  // false (nothing changed) when the loop does not qualify.
  bool registerTick(Loop *L, const SmallPtrSetImpl<Instruction *> &Instrumented) {
    BasicBlock *Pre = L->getLoopPreheader(), *H = L->getHeader(), *Latch = L->getLoopLatch();
    if (!L->isInnermost() || !Pre || !Latch || !L->hasDedicatedExits())
      return false;
    for (BasicBlock *BB : L->blocks())
      for (Instruction &I : *BB)
        if ((isa<CallBase>(I) && !isa<IntrinsicInst>(I)) || I.isAtomic() || Instrumented.count(&I))
          return false;
    SmallVector<BasicBlock *, 4> Exits;
    L->getUniqueExitBlocks(Exits);
    IRBuilder<> PB(Pre->getTerminator());
    Value *B0 = PB.CreateLoad(I64, PB.CreateThreadLocalAddress(tls()), "det.ticks");
    PHINode *B = PHINode::Create(I64, 2, "det.ticks.loop");
    B->insertBefore(H->begin());
    IRBuilder<> LB(Latch->getTerminator());
    Value *B1 = LB.CreateSub(B, ConstantInt::get(I64, 1));
    Value *Out = LB.CreateICmpSLE(B1, ConstantInt::get(I64, 0));
    MDNode *Rare = MDBuilder(C).createUnlikelyBranchWeights();
    Instruction *Then = SplitBlockAndInsertIfThen(Out, Latch->getTerminator(), false, Rare);
    IRBuilder<> TB(Then);
    Value *Tp = TB.CreateThreadLocalAddress(tls());
    TB.CreateStore(B1, Tp);
    TB.CreateCall(localSlow(), {TB.getInt32(WHICH_TICK)});
    Value *B2 = TB.CreateLoad(I64, Tp);
    BasicBlock *Tail = Then->getSuccessor(0);
    PHINode *BN = PHINode::Create(I64, 2, "det.ticks.next");
    BN->insertBefore(Tail->begin());
    BN->addIncoming(B1, Latch);
    BN->addIncoming(B2, Then->getParent());
    for (BasicBlock *P : predecessors(H))
      B->addIncoming(P == Pre ? B0 : BN, P);
    for (BasicBlock *X : Exits) {
      PHINode *V = PHINode::Create(I64, 2, "det.ticks.out");
      V->insertBefore(X->begin());
      for (BasicBlock *P : predecessors(X))
        V->addIncoming(P == Tail ? BN : B, P);
      IRBuilder<> XB(&*X->getFirstInsertionPt());
      XB.CreateStore(V, XB.CreateThreadLocalAddress(tls()));
    }
    return true;
  }

  bool runOnFunction(Function &F, FunctionAnalysisManager &FAM) {
    if (F.isDeclaration() || F.getName().starts_with("det_cc_"))
      return false;
    SmallVector<Instruction *, 32> Atomics, Accesses;
    for (Instruction &I : instructions(F)) {
      if (I.isAtomic()) {
        if (auto *Fe = dyn_cast<FenceInst>(&I); Fe && Fe->getSyncScopeID() == SyncScope::SingleThread)
          continue; // a compiler barrier (atomic_signal_fence): not between threads
        if (auto *L = dyn_cast<LoadInst>(&I); L && L->getSyncScopeID() == SyncScope::SingleThread)
          continue;
        if (auto *S = dyn_cast<StoreInst>(&I); S && S->getSyncScopeID() == SyncScope::SingleThread)
          continue;
        Atomics.push_back(&I);
      } else if (Memory && (isa<LoadInst>(I) || isa<StoreInst>(I)) && !threadLocal(pointerOf(&I))) {
        Accesses.push_back(&I);
      }
    }
    SmallVector<std::pair<const BasicBlock *, const BasicBlock *>, 8> Back;
    if (Ticks)
      FindFunctionBackedges(F, Back);
    // Where the ticks go, found before any block is split: the branch of
    // every block with a back-edge, and the entry after its allocas (they
    // must stay in the entry block to remain static).
    SmallPtrSet<Instruction *, 8> TickAt;
    for (auto &E : Back)
      TickAt.insert(const_cast<BasicBlock *>(E.first)->getTerminator());
    Instruction *Entry = &*F.getEntryBlock().getFirstInsertionPt();
    while (isa<AllocaInst>(Entry))
      Entry = Entry->getNextNode();
    // Ticks and points first: an atomic's begin and end calls are then
    // inserted right around it, with nothing between them and it.
    if (Ticks) {
      SmallPtrSet<Instruction *, 32> Instrumented(Accesses.begin(), Accesses.end());
      SmallVector<Loop *, 8> Inner;
      for (Loop *L : FAM.getResult<LoopAnalysis>(F).getLoopsInPreorder())
        if (L->isInnermost())
          Inner.push_back(L);
      for (Loop *L : Inner) {
        Instruction *Term = L->getLoopLatch() ? L->getLoopLatch()->getTerminator() : nullptr;
        if (Term && TickAt.count(Term) && registerTick(L, Instrumented))
          TickAt.erase(Term);
      }
      for (Instruction *I : TickAt)
        countdown(I, WHICH_TICK);
      countdown(Entry, WHICH_TICK);
    }
    for (Instruction *I : Accesses)
      countdown(I, WHICH_POINT);
    for (Instruction *I : Atomics)
      atomic(I);
    return Ticks || !Atomics.empty() || !Accesses.empty();
  }

  bool run(FunctionAnalysisManager &FAM) {
    if (SchedPoints != "none" && SchedPoints != "memory")
      report_fatal_error("det: -det-sched-points must be none or memory, not '" + Twine(SchedPoints) + "'");
    bool Changed = false;
    SmallVector<Function *, 64> Fns;
    for (Function &F : M)
      Fns.push_back(&F);
    for (Function *F : Fns)
      Changed |= runOnFunction(*F, FAM);
    if (Changed) {
      // Tell the runtime (and det's tools) how this module was built.
      auto *Mark = new GlobalVariable(M, I32, true, GlobalValue::LinkOnceODRLinkage,
                                      ConstantInt::get(I32, Memory ? 2 : 1),
                                      Memory ? DET_CC_BUILT_MEMORY : DET_CC_BUILT);
      appendToUsed(M, {Mark});
    }
    return Changed;
  }
};

struct DetPass : PassInfoMixin<DetPass> {
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &MAM) {
    auto &FAM = MAM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager();
    return DetInstrument(M).run(FAM) ? PreservedAnalyses::none() : PreservedAnalyses::all();
  }
  static bool isRequired() { return true; }
};

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "det", "1", [](PassBuilder &PB) {
            PB.registerOptimizerLastEPCallback(
                [](ModulePassManager &MPM, OptimizationLevel, ThinOrFullLTOPhase) { MPM.addPass(DetPass()); });
            PB.registerPipelineParsingCallback(
                [](StringRef Name, ModulePassManager &MPM, ArrayRef<PassBuilder::PipelineElement>) {
                  if (Name != "det")
                    return false;
                  MPM.addPass(DetPass());
                  return true;
                });
          }};
}
