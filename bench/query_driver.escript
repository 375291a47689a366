%% -*- erlang -*-
%% OTP side of the query benchmarks (query_test.go). Every result is one
%% line "RESULT key=value ..." on stdout, as otp_driver.escript prints.
%%   select N File   dets:select with the bench's guard on a byte of the
%%                   value, over File (objects 0..N-1 of workload.go),
%%                   median of 3 passes
%%   match_object N File   bound-key dets:match_object and dets:lookup of
%%                   N keys in the lookup order of workload.go, median of 3
-mode(compile).

main(["select", NStr, File]) ->
    select(list_to_integer(NStr), File);
main(["match_object", NStr, File]) ->
    match_object(list_to_integer(NStr), File);
main(Args) ->
    io:format(standard_error, "query_driver: bad arguments ~p~n", [Args]),
    halt(2).

key(I) -> <<I:128>>.

now_ns() -> erlang:monotonic_time(nanosecond).

%% The objects whose value's byte 3 (the low byte of I) is 7.
spec() -> [{{'_', '$1'}, [{'=:=', {binary_part, '$1', 3, 1}, <<7>>}], ['$_']}].

select(N, File) ->
    {ok, T} = dets:open_file(bench, [{file, File}, {type, set}, {access, read}]),
    MS = spec(),
    Passes = [begin
                  A = now_ns(),
                  L = dets:select(T, MS),
                  {now_ns() - A, length(L)}
              end || _ <- lists:seq(1, 3)],
    ok = dets:close(T),
    [{_, Found} | _] = Passes,
    result(select, N, median([D || {D, _} <- Passes]), [{found, Found}]).

match_object(N, File) ->
    {ok, T} = dets:open_file(bench, [{file, File}, {type, set}, {access, read}]),
    Keys = [key((J * 7919) rem N) || J <- lists:seq(0, N - 1)],
    Match = fun() ->
                A = now_ns(),
                _ = [[_] = dets:match_object(T, {K, '_'}) || K <- Keys],
                now_ns() - A
            end,
    Lookup = fun() ->
                 A = now_ns(),
                 _ = [[_] = dets:lookup(T, K) || K <- Keys],
                 now_ns() - A
             end,
    Ms = [Match() || _ <- lists:seq(1, 3)],
    Ls = [Lookup() || _ <- lists:seq(1, 3)],
    ok = dets:close(T),
    result(match_object, N, median(Ms), []),
    result(lookup, N, median(Ls), []).

median(L) -> lists:nth(length(L) div 2 + 1, lists:sort(L)).

result(Op, N, Ns, Extra) ->
    io:format("RESULT op=~s n=~b total_ns=~b~s~n",
              [Op, N, Ns, [io_lib:format(" ~s=~b", [K, V]) || {K, V} <- Extra]]).
