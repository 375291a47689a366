%% -*- erlang -*-
%% OTP side of the godets benchmarks. Run with escript; every result is one
%% line "RESULT key=value ..." on stdout. Keys and values are generated here
%% exactly as bench/workload.go generates them, so no data crosses over:
%%   key(I)   = <<I:128>>                 (16 bytes)
%%   value(I) = 25 copies of <<I:32>>     (100 bytes)
%%   lookup order: J = (I * 7919) rem N   for I in 0..N-1
-mode(compile).

main(["engine", NStr, Dir]) ->
    N = list_to_integer(NStr),
    engine(N, Dir);
main(["dirty", NStr, Extra, File]) ->
    dirty(list_to_integer(NStr), list_to_integer(Extra), File);
main(["repair", File]) ->
    repair(File);
main(["cycle", ItersStr, File]) ->
    cycle(list_to_integer(ItersStr), File);
main(["build", NStr, File]) ->
    build(list_to_integer(NStr), File),
    io:format("RESULT op=build~n");
main(Args) ->
    io:format(standard_error, "otp_driver: bad arguments ~p~n", [Args]),
    halt(2).

key(I) -> <<I:128>>.
value(I) -> binary:copy(<<I:32>>, 25).
obj(I) -> {key(I), value(I)}.

now_ns() -> erlang:monotonic_time(nanosecond).

open(File, Extra) ->
    {ok, T} = dets:open_file(bench, [{file, File}, {type, set} | Extra]),
    T.

insert_range(T, From, To) when From < To ->
    ok = dets:insert(T, obj(From)),
    insert_range(T, From + 1, To);
insert_range(_, _, _) -> ok.

build(N, File) ->
    T = open(File, []),
    insert_range(T, 0, N),
    ok = dets:close(T).

lookups(_T, _N, I, I) -> ok;
lookups(T, N, I, Stop) ->
    J = (I * 7919) rem N,
    Val = value(J),
    [{_, Val}] = dets:lookup(T, key(J)),
    lookups(T, N, I + 1, Stop).

%% Each measurement is the median of 3 passes (open: of 5), because the
%% machine is shared and one pass is noisy.
engine(N, Dir) ->
    File = filename:join(Dir, "otp_engine.dets"),
    %% insert: create, N single inserts, close (the close flushes OTP's
    %% write cache, so it is part of the cost of getting the data on disk)
    Inserts = [begin
                   _ = file:delete(File),
                   A = now_ns(), build(N, File), now_ns() - A
               end || _ <- lists:seq(1, 3)],
    Size = filelib:file_size(File),
    result(insert, N, median(Inserts), [{file_size, Size}]),
    %% open of a properly closed file, close not timed
    Opens = [begin
                 A = now_ns(), T = open(File, []), B = now_ns(),
                 ok = dets:close(T), B - A
             end || _ <- lists:seq(1, 5)],
    result(open, 1, median(Opens), []),
    %% random lookups, then full scans, on one open table
    Tl = open(File, []),
    Looks = [begin
                 A = now_ns(), ok = lookups(Tl, N, 0, N), now_ns() - A
             end || _ <- lists:seq(1, 3)],
    result(lookup, N, median(Looks), []),
    Scans = [begin
                 A = now_ns(),
                 N = dets:foldl(fun(_, Acc) -> Acc + 1 end, 0, Tl),
                 now_ns() - A
             end || _ <- lists:seq(1, 3)],
    result(scan, N, median(Scans), []),
    ok = dets:close(Tl).

%% dirty leaves File not closed properly: N inserts, sync, Extra more
%% inserts that overwrite existing keys, a lookup (which flushes OTP's write
%% cache), then halt without close: the state a crash leaves.
dirty(N, Extra, File) ->
    file:delete(File),
    T = open(File, []),
    insert_range(T, 0, N),
    ok = dets:sync(T),
    [ok = dets:insert(T, {key(I), value(I + 1)}) || I <- lists:seq(0, Extra - 1)],
    [_] = dets:lookup(T, key(0)),
    io:format("RESULT op=dirty n=~b~n", [N]),
    erlang:halt(0).

repair(File) ->
    A = now_ns(),
    {ok, T} = dets:open_file(bench, [{file, File}, {type, set}, {repair, true}]),
    B = now_ns(),
    Size = dets:info(T, size),
    ok = dets:close(T),
    result(repair, 1, B - A, [{objects, Size}]).

cycle(Iters, File) ->
    K = key(500),
    One = fun() ->
              A = now_ns(),
              {ok, T} = dets:open_file(bench, [{file, File}]),
              [_] = dets:lookup(T, K),
              ok = dets:close(T),
              now_ns() - A
          end,
    _ = [One() || _ <- lists:seq(1, 50)], % warm-up
    Ds = lists:sort([One() || _ <- lists:seq(1, Iters)]),
    P95 = lists:nth(max(1, (Iters * 95) div 100), Ds),
    io:format("RESULT op=cycle n=~b median_ns=~b p95_ns=~b~n",
              [Iters, median(Ds), P95]).

median(L) -> lists:nth(length(L) div 2 + 1, lists:sort(L)).

result(Op, N, Ns, Extra) ->
    io:format("RESULT op=~s n=~b total_ns=~b~s~n",
              [Op, N, Ns, [io_lib:format(" ~s=~b", [K, V]) || {K, V} <- Extra]]).
