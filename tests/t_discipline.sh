#!/usr/bin/env bash
# t_discipline.sh -- heapprof's error discipline, read from the source (every
# .c and .h under src/), so that an error can be neither swallowed nor
# mislabelled by a new line of code:
#  catch     every PG_CATCH re-throws (PG_RE_THROW, or a new ereport/elog at
#            ERROR or above), or rolls back a subtransaction its function
#            began (BeginInternalSubTransaction ... RollbackAndReleaseCurrent-
#            SubTransaction): anything else swallows an error and leaves
#            the transaction's state behind it;
#  flush     FlushErrorState only in a PG_CATCH that rolls back such a
#            subtransaction or raises a new ERROR after it (one that
#            replaces the error caught);
#  return    no return between PG_TRY and PG_END_TRY: from the PG_TRY part it
#            leaves PG_exception_stack pointing into a dead frame, from
#            PG_CATCH or PG_FINALLY it drops the error;
#  table     a table indexed by an enum is checked against the enum at
#            compile time: an array initialised with [] that the file
#            indexes by a variable must be bounded by its own length (lengthof or sizeof
#            in the file: a loop bound, or StaticAssertDecl(lengthof(t) ==
#            X_COUNT) / _Static_assert for an enum's _COUNT member);
#  errno     %m and errcode_for_file_access() read errno: no cleanup call
#            (close, unlink, CloseTransientFile, ...) as a statement between
#            the failing call and the ereport unless errno is restored after it;
#  sqlstate  a file error takes its SQLSTATE from its errno: no ereport with
#            a fixed errcode(ERRCODE_IO_ERROR) that prints an errno (%m,
#            strerror); use errcode_for_file_access() (with errno = rc).
# and one rule for the shell scripts of tests/, bench/ and .ci/, which run
# with pipefail:
#  pipe      no pipeline into a reader that can stop before its input ends
#            (grep -q, -l, -m; head; awk's exit; sed's q; cmp): the writer
#            then dies of SIGPIPE when its output is larger than the pipe's
#            buffer, and the pipeline fails by timing (CI's t_formats failed
#            on 4 kB of --help). grep PATTERN >/dev/null (GNU grep reads its
#            input to the end before it exits), sed -n 1p instead. Whole
#            files are read: comment lines and here-documents are skipped,
#            a pipe at the end of a line and |& are followed.
# Each rule prints file:line and what is wrong.
set -uo pipefail
cd "$HP_TOP" || exit 1

src_rules=$(perl -e '
use strict;
use warnings;
my $fail = 0;
sub lineof { my ($t, $pos) = @_; return 1 + (substr($t, 0, $pos) =~ tr/\n//); }
sub bad { my ($f, $l, $rule, $msg) = @_; print "$f:$l: [$rule] $msg\n"; $fail = 1; }

for my $f (@ARGV) {
	open(my $fh, "<", $f) or die "$f: $!";
	local $/;
	my $raw = <$fh>;
	close $fh;
	# comments out, newlines kept so that line numbers stay right
	(my $t = $raw) =~ s{/\*.*?\*/}{ my $c = $&; $c =~ s/[^\n]//g; $c }gse;
	$t =~ s{//[^\n]*}{}g;

	# PG_TRY blocks, nested ones included: [try, catch or finally, end, kind]
	my (@stack, @blocks);
	while ($t =~ /\b(PG_TRY|PG_CATCH|PG_FINALLY|PG_END_TRY)\s*\(\s*\)/g) {
		my ($w, $p) = ($1, $-[0]);
		if ($w eq "PG_TRY") { push @stack, {try => $p}; }
		elsif (!@stack) { bad($f, lineof($t, $p), "catch", "$w without PG_TRY"); }
		elsif ($w eq "PG_END_TRY") { my $b = pop @stack; $b->{end} = $p; push @blocks, $b; }
		else { $stack[-1]{mid} = $p; $stack[-1]{kind} = $w; }
	}
	my @flush_ok;
	for my $b (@blocks) {
		my $body = substr($t, $b->{try}, $b->{end} - $b->{try});
		while ($body =~ /\breturn\b/g) {
			bad($f, lineof($t, $b->{try} + $-[0]), "return", "return inside PG_TRY ... PG_END_TRY");
		}
		next unless ($b->{kind} // "") eq "PG_CATCH";
		my $catch = substr($t, $b->{mid}, $b->{end} - $b->{mid});
		# the function around it: from the last line that opens a body at column 0
		my $start = rindex($t, "\n{\n", $b->{try});
		my $before = substr($t, $start < 0 ? 0 : $start, $b->{try} - ($start < 0 ? 0 : $start));
		my $rethrows = $catch =~ /\bPG_RE_THROW\s*\(|\b(ereport|elog)\s*\(\s*(ERROR|FATAL|PANIC)\b/;
		my $subxact = $catch =~ /\bRollbackAndReleaseCurrentSubTransaction\s*\(/ &&
			$before =~ /\bBeginInternalSubTransaction\s*\(/;
		# flushing is fine before the rollback of a subtransaction, or before a new ERROR replacing it
		push @flush_ok, [$b->{mid}, $b->{end}] if $subxact;
		if ($catch =~ /.*\b(ereport|elog)\s*\(\s*(ERROR|FATAL|PANIC)\b/s) {
			push @flush_ok, [$b->{mid}, $b->{mid} + $-[1]];
		}
		bad($f, lineof($t, $b->{mid}), "catch",
			"PG_CATCH neither re-throws nor rolls back a subtransaction its function began: the error is swallowed")
			unless $rethrows || $subxact;
	}
	while ($t =~ /\bFlushErrorState\s*\(/g) {
		my $p = $-[0];
		bad($f, lineof($t, $p), "flush",
			"FlushErrorState outside a PG_CATCH that rolls back its subtransaction or raises a new ERROR after it")
			unless grep { $p > $_->[0] && $p < $_->[1] } @flush_ok;
	}

	# tables: "NAME[] = {" that the file indexes with NAME[expr]
	my @tables;
	while ($t =~ /\b(\w+)\s*\[\s*\]\s*=\s*\{/g) { push @tables, [$1, $-[0]]; }
	for my $tab (@tables) {
		my ($name, $p) = @$tab;
		# a local table: its function only
		my $bol = rindex($t, "\n", $p) + 1;
		my $end = substr($t, $bol, 1) =~ /\s/ ? index($t, "\n}", $p) : length($t);
		my $scope = substr($t, $p, ($end < 0 ? length($t) : $end) - $p);
		next unless $scope =~ /\b\Q$name\E\s*\[\s*[^\]\s0-9]/;	# a constant index the compiler checks
		bad($f, lineof($t, $p), "table",
			"$name is indexed but never bounded by its length: StaticAssertDecl(lengthof($name) == X_COUNT) for an enum index")
			unless $scope =~ /\b(lengthof|sizeof)\s*\(\s*\Q$name\E\s*\)/;
	}

	# errno: ereports that read it, and the statements just before them
	my @lines = split /\n/, $t, -1;
	for (my $i = 0; $i < @lines; $i++) {
		next unless $lines[$i] =~ /\bereport\s*\(/;
		# the whole ereport statement
		my ($j, $depth, $stmt) = ($i, 0, "");
		for (; $j < @lines; $j++) {
			$stmt .= $lines[$j] . "\n";
			last if $stmt =~ /\)\s*;\s*$/ && ($stmt =~ tr/(//) == ($stmt =~ tr/)//);
		}
		if ($stmt =~ /errcode\s*\(\s*ERRCODE_IO_ERROR\s*\)/ && $stmt =~ /%m|\bstrerror\s*\(/) {
			bad($f, $i + 1, "sqlstate", "a fixed ERRCODE_IO_ERROR for an errno: use errcode_for_file_access()");
		}
		next unless $stmt =~ /%m|errcode_for_file_access\s*\(/;
		# back to the failing call: at most 8 lines, not past a block start
		for (my $k = $i - 1; $k >= 0 && $k >= $i - 8; $k--) {
			my $l = $lines[$k];
			last if $l =~ /^\s*(\{|\}|if\b|else\b|while\b|for\b)/ && $l !~ /^\s*\}\s*$/ && $k < $i - 1 && $l =~ /\(/;
			last if $l =~ /\berrno\s*=[^=]/;
			if ($l =~ /^\s*(\(void\)\s*)?(close|unlink|CloseTransientFile|FreeFile|fclose|closedir|FreeDir|durable_unlink|pfree|hpg_remove_dump_files)\s*\(.*\)\s*;\s*$/) {
				bad($f, $k + 1, "errno", "$2() between a failure and the ereport that reads errno (line " . ($i + 1) . "): save errno and restore it");
				last;
			}
		}
	}
}
print scalar(@ARGV) . " files of src/ follow the catch, flush, return, table, errno and sqlstate rules" unless $fail;
exit $fail;
' $(find src -name '*.c' -o -name '*.h' | sort)) || { printf '%s\n' "$src_rules"; exit 1; }

# (not this file: the rule names the readers it refuses)
scripts=$(for f in tests/* tests/*/* bench/* .ci/*; do
	[ -f "$f" ] && [ "$f" != tests/t_discipline.sh ] || continue
	case $f in *.sh) echo "$f" ;; *) sed -n 1p "$f" | grep -E '^#!.*\b(ba)?sh\b' >/dev/null && echo "$f" ;; esac
done)
[ -n "$scripts" ] || { echo "no shell scripts found"; exit 1; }
src_rules=$src_rules perl -0777 -ne '
	BEGIN { $fail = 0; $n = 0 }
	$n++;
	my $s = $_;
	$s =~ s/^[ \t]*#[^\n]*//mg;	# comment lines (their newline stays: line numbers hold)
	$s =~ s{((?<!<)<<(?!<)-?[ \t]*([\x27"]?)([A-Za-z_]\w*)\2[^\n]*\n)(.*?\n)([ \t]*\3\n)}{$1 . ("\n" x ($4 =~ tr/\n//)) . $5}gse;	# here-documents
	while ($s =~ m~(?<![|])\|&?(?:\s|\\\n)*(?:\w+=\S*\s+)*(?:command\s+|env\s+)?(
		  [ef]?grep\b(?:(?![ \t]--[ \t])[^|;&)\n])*?[ \t](?:-[a-zA-Z]*[qlLm]|--(?:quiet|silent|max-count|files-with))
		| head\b(?!-) | cmp\b | (?:\{\s*)?read\b
		| sed\b[^|;&\n]*?[\s\x27";\x7b\x7d\/\$\d][qQ](?:[ \t]*\d+)?[ \t]*(?:[;\x7d\x27"]|\s)
		| awk\b[^\x27|;&\n]*\x27(?:(?!\bEND\b)[^\x27])*?\bexit\b
		)~gx) {
		my ($what, $line) = ($1, 1 + (substr($s, 0, $-[0]) =~ tr/\n//));
		$what =~ s/\s+/ /g;
		print "$ARGV:$line: [pipe] a pipeline into \"" . substr($what, 0, 40) . "\", which can stop reading early: its writer then fails with SIGPIPE under pipefail\n";
		$fail = 1;
	}
	END { print "discipline: $ENV{src_rules}; $n shell scripts follow the pipe rule\n" unless $fail; exit $fail }
' $scripts
